package authserver

import (
	"context"
	"errors"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// refresh exchanges a refresh token (OAuth 2.1 §4.3, requirement AS-12).
// Every use rotates the token; presenting a rotated one again is reuse and
// revokes the whole grant, so the thief and the victim both lose the family.
// The scope may only narrow, and a requested resource must be within the
// grant.
//
// A grant bound to a DPoP key (a public client's, RFC 9449 §5) is refreshed
// only with a proof of that key, jkt.
func (s *Server) refresh(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	raw := form.Get("refresh_token")
	if raw == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "refresh_token is required")
	}
	bad := oauthErr(oauthmeta.CodeInvalidGrant, "refresh token is invalid, expired or revoked")
	rec, err := s.store.RefreshTokens.RefreshToken(ctx, tokenKey(raw))
	if errors.Is(err, ErrNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	if rec.ClientID != client.ID {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "refresh token was issued to another client")
	}
	grant, err := s.store.Grants.Grant(ctx, rec.GrantID)
	if errors.Is(err, ErrNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if grant.Revoked || !now.Before(rec.ExpiresAt) || !now.Before(grant.ExpiresAt) {
		return nil, bad
	}
	switch {
	case grant.DPoPJKT == "":
	case jkt == "":
		return nil, errRefreshNoProof()
	case grant.DPoPJKT != jkt: // also checked before the proof's jti is recorded (checkDPoP)
		return nil, errRefreshOtherKey()
	}
	if rec.Rotated {
		return nil, s.refreshReused(ctx, grant.ID)
	}
	scopes, oe := narrowScopes(grant.Scopes, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	if scopes, oe = s.grantPolicyCeiling(scopes); oe != nil {
		return nil, oe
	}
	resources, oe := narrowResources(grant.Resources, form["resource"])
	if oe != nil {
		return nil, oe
	}
	access, err := s.issueAccessToken(ctx, grant, scopes, resources, now, jkt)
	if err != nil {
		return nil, err
	}
	next := randomToken(32)
	err = s.store.RefreshTokens.RotateRefreshToken(ctx, rec.Key, &RefreshToken{
		Key: tokenKey(next), GrantID: grant.ID, ClientID: client.ID, IssuedAt: now, ExpiresAt: grant.ExpiresAt,
	})
	if errors.Is(err, ErrAlreadyUsed) {
		return nil, s.refreshReused(ctx, grant.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.tokenResponse(access, next, scopes, jkt), nil
}

// refreshReused revokes the family of a refresh token used twice (OAuth 2.1
// §4.3.1, RFC 9700 §4.14.2).
func (s *Server) refreshReused(ctx context.Context, grantID string) error {
	s.log.WarnContext(ctx, "rotated refresh token used again; revoking its grant")
	if err := s.revokeGrant(ctx, grantID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return oauthErr(oauthmeta.CodeInvalidGrant, "refresh token was already used; the grant is revoked")
}

// narrowScopes returns the scopes for a refreshed access token: the
// requested ones, each of which must have been granted (RFC 6749 §6), or all
// granted ones.
func narrowScopes(granted []string, requested string) ([]string, *oauthmeta.Error) {
	scopes, err := oauthmeta.ParseScope(requested)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "malformed scope")
	}
	if len(scopes) == 0 {
		return granted, nil
	}
	for _, sc := range scopes {
		if !slices.Contains(granted, sc) {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "refresh cannot add scopes that were not granted")
		}
	}
	return scopes, nil
}
