package authserver

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// errBadCode is the one answer for every unusable code, so a caller learns
// nothing about which check failed.
func errBadCode(desc string) error { return oauthErr(oauthmeta.CodeInvalidGrant, desc) }

// exchangeCode redeems an authorization code (OAuth 2.1 §4.1.3,
// requirement AS-09). The code must be unexpired and bound to this client
// (CIMD-09), redirect URI and PKCE verifier (AS-04); a requested resource
// must be within the authorization (AS-08). A second valid redemption
// revokes the grant of the first; a replay with a wrong verifier revokes
// nothing.
//
// jkt is the thumbprint of the request's DPoP proof key, "" without one:
// the access token is bound to it, and for a public client the grant (and
// so every refresh token of it) as well (RFC 9449 §5).
func (s *Server) exchangeCode(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	code := form.Get("code")
	if code == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "code is required")
	}
	key := tokenKey(code)
	rec, err := s.store.Codes.Code(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, errBadCode("unknown authorization code")
	}
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if oe := checkCodeBinding(rec, client, form); oe != nil {
		return nil, oe
	}
	if !now.Before(rec.ExpiresAt) {
		return nil, errBadCode("authorization code expired")
	}
	resources, oe := narrowResources(rec.Resources, form["resource"])
	if oe != nil {
		return nil, oe
	}
	if rec.RedeemedBy != "" {
		return nil, s.codeReplayed(ctx, rec.RedeemedBy)
	}
	grant := &Grant{
		ID: randomToken(16), ClientID: client.ID, Subject: rec.Subject,
		Scopes: rec.Scopes, Resources: rec.Resources, CreatedAt: now,
		ExpiresAt: now.Add(s.cfg.AccessTokenTTL), UpstreamTokens: rec.UpstreamTokens,
	}
	if client.public() {
		grant.DPoPJKT = jkt
	}
	if rec.Refresh {
		grant.ExpiresAt = now.Add(s.cfg.RefreshTokenTTL)
	}
	if err := s.store.Grants.SaveGrant(ctx, grant); err != nil {
		return nil, err
	}
	if first, err := s.store.Codes.RedeemCode(ctx, key, grant.ID); err != nil {
		_ = s.store.Grants.RevokeGrant(ctx, grant.ID)
		if errors.Is(err, ErrAlreadyUsed) {
			return nil, s.codeReplayed(ctx, first.RedeemedBy)
		}
		return nil, err
	}
	s.bindUpstreamTokens(ctx, grant)
	return s.issueTokens(ctx, grant, rec.Scopes, resources, rec.Refresh, now, jkt)
}

// checkCodeBinding compares the token request with what the code is bound
// to.
func checkCodeBinding(rec *Code, client *Client, form url.Values) *oauthmeta.Error {
	if rec.ClientID != client.ID {
		return oauthErr(oauthmeta.CodeInvalidGrant, "authorization code was issued to another client")
	}
	redirectURI, sent := form.Get("redirect_uri"), form.Has("redirect_uri")
	if (rec.RedirectURISent || sent) && redirectURI != rec.RedirectURI {
		return oauthErr(oauthmeta.CodeInvalidGrant, "redirect_uri does not match the authorization request")
	}
	if !pkce.Verify(form.Get("code_verifier"), rec.Challenge) {
		return oauthErr(oauthmeta.CodeInvalidGrant, "code_verifier does not match the code_challenge")
	}
	return nil
}

// codeReplayed revokes the grant created by the first redemption (OAuth 2.1
// §4.1.3: the tokens previously issued from the code SHOULD be revoked).
func (s *Server) codeReplayed(ctx context.Context, grantID string) error {
	s.log.WarnContext(ctx, "authorization code used twice; revoking the grant it produced")
	if err := s.revokeGrant(ctx, grantID); err != nil {
		return err
	}
	return errBadCode("authorization code was already used")
}

// issueTokens signs an access token for the grant and, when refresh is
// allowed, starts or continues its refresh token family.
func (s *Server) issueTokens(ctx context.Context, g *Grant, scopes, resources []string, withRefresh bool, now time.Time, jkt string) (*oauthmeta.TokenResponse, error) {
	access, err := s.issueAccessToken(ctx, g, scopes, resources, now, jkt)
	if err != nil {
		return nil, err
	}
	var refresh string
	if withRefresh {
		refresh = randomToken(32)
		err := s.store.RefreshTokens.SaveRefreshToken(ctx, &RefreshToken{
			Key: tokenKey(refresh), GrantID: g.ID, ClientID: g.ClientID, IssuedAt: now, ExpiresAt: g.ExpiresAt,
		})
		if err != nil {
			return nil, err
		}
	}
	return s.tokenResponse(access, refresh, scopes, jkt), nil
}
