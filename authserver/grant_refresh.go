package authserver

import (
	"context"
	"errors"
	"net/url"

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
	u := RefreshUse{Key: tokenKey(raw), ClientID: client.ID, JKT: jkt, Now: s.clock.Now()}
	if resp, err := s.refreshInOneStep(ctx, u, form); resp != nil || err != nil {
		return resp, err
	}
	rec, err := s.store.RefreshTokens.RefreshToken(ctx, u.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, errRefreshInvalid()
	}
	if err != nil {
		return nil, err
	}
	grant, err := s.store.Grants.Grant(ctx, rec.GrantID)
	switch {
	case errors.Is(err, ErrNotFound):
		grant = nil
	case err != nil:
		return nil, err
	}
	if err := u.check(rec, grant); err != nil {
		return nil, err
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
	access, err := s.issueAccessToken(ctx, grant, scopes, resources, u.Now, jkt)
	if err != nil {
		return nil, err
	}
	next := randomToken(32)
	err = s.store.RefreshTokens.RotateRefreshToken(ctx, rec.Key, &RefreshToken{
		Key: tokenKey(next), GrantID: grant.ID, ClientID: client.ID, IssuedAt: u.Now, ExpiresAt: grant.ExpiresAt,
	})
	if errors.Is(err, ErrAlreadyUsed) {
		return nil, s.refreshReused(ctx, grant.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.tokenResponse(access, next, scopes, jkt), nil
}

// refreshInOneStep is the common refresh in one store call
// ([RefreshTokenUser]): the request keeps the grant's scopes and
// resources and no grant policy may narrow them, so nothing the grant
// holds can fail the request once the store accepted the token. The
// signing key is fetched first, so nothing that may fail comes after the
// rotation. It returns nil, nil when it does not apply or the store refused
// the token; the caller then reads the records and answers why.
func (s *Server) refreshInOneStep(ctx context.Context, u RefreshUse, form url.Values) (*oauthmeta.TokenResponse, error) {
	user, ok := s.store.RefreshTokens.(RefreshTokenUser)
	if !ok || any(s.store.Grants) != any(s.store.RefreshTokens) || form.Has("scope") || form.Has("resource") ||
		s.hasGrantPolicy() {
		return nil, nil
	}
	key, err := s.keys.signingKey(ctx, u.Now)
	if err != nil {
		return nil, err
	}
	next := randomToken(32)
	u.NextKey = tokenKey(next)
	grant, err := user.UseRefreshToken(ctx, u)
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	access, err := signClaims(key, s.accessClaims(grant, grant.Scopes, grant.Resources, u.Now, u.JKT))
	if err != nil {
		return nil, err
	}
	return s.tokenResponse(access, next, grant.Scopes, u.JKT), nil
}

// check applies a refresh request's checks, in order, to the presented
// token and its grant (nil when missing); reuse of a rotated token is the
// caller's. It is the one statement of the rules that every
// [RefreshTokenUser] enforces.
func (u RefreshUse) check(t *RefreshToken, g *Grant) error {
	switch {
	case t.ClientID != u.ClientID:
		return oauthErr(oauthmeta.CodeInvalidGrant, "refresh token was issued to another client")
	case g == nil || g.Revoked || !u.Now.Before(t.ExpiresAt) || !u.Now.Before(g.ExpiresAt):
		return errRefreshInvalid()
	case g.DPoPJKT == "":
		return nil
	case u.JKT == "":
		return errRefreshNoProof()
	case g.DPoPJKT != u.JKT: // also checked before the proof's jti is recorded (checkDPoP)
		return errRefreshOtherKey()
	}
	return nil
}

// errRefreshInvalid refuses a refresh token that is unknown, expired or
// revoked, without saying which.
func errRefreshInvalid() *oauthmeta.Error {
	return oauthErr(oauthmeta.CodeInvalidGrant, "refresh token is invalid, expired or revoked")
}

// refreshReused revokes the family of a refresh token used twice (OAuth 2.1
// §4.3.1, RFC 9700 §4.14.2).
func (s *Server) refreshReused(ctx context.Context, grantID string) error {
	s.log.WarnContext(ctx, "rotated refresh token used again; revoking its grant")
	if err := s.revokeGrant(ctx, grantID); err != nil {
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
	if !subset(scopes, granted) {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "refresh cannot add scopes that were not granted")
	}
	return scopes, nil
}
