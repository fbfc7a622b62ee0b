package authserver

import (
	"context"
	"net/http"
	"slices"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// introspection is the RFC 7662 introspection endpoint.
type introspection struct {
	front       *backChannel
	tokens      *accessTokens
	grants      GrantStore
	refresh     RefreshTokenStore
	revocations RevocationStore
	issuer      string
	clock       clock.Func
}

// handleIntrospect is the RFC 7662 introspection endpoint. Callers must
// authenticate as a confidential client. Unknown, expired and revoked tokens
// get {"active":false} and nothing else; an access token is inactive once its
// grant is revoked (for example by refresh token reuse or revocation).
func (e *introspection) handleIntrospect(w http.ResponseWriter, r *http.Request) {
	_, token, ok := e.front.tokenRequest(w, r, true)
	if !ok {
		return
	}
	resp, err := e.introspect(r.Context(), token)
	if err != nil {
		e.front.errs.write(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// introspect describes token: an access token of ours, else a refresh
// token, else inactive.
func (e *introspection) introspect(ctx context.Context, token string) (*oauthmeta.IntrospectionResponse, error) {
	inactive := &oauthmeta.IntrospectionResponse{Active: false}
	now := e.clock.Now()
	if claims, err := e.tokens.parse(token, now); err == nil {
		ok, err := e.accessTokenLive(ctx, claims)
		if err != nil || !ok {
			return inactive, err
		}
		tt := "Bearer"
		if claims.Cnf != nil {
			tt = "DPoP"
		}
		return &oauthmeta.IntrospectionResponse{
			Active: true, Scope: claims.Scope, ClientID: claims.ClientID, TokenType: tt,
			Exp: claims.Expires, Iat: claims.IssuedAt, Sub: claims.Subject, Aud: claims.Audience,
			Iss: claims.Issuer, Jti: claims.JTI, Cnf: claims.Cnf, Act: claims.Act,
		}, nil
	}
	if len(token) > maxTokenLength {
		return inactive, nil
	}
	rec, grant, err := e.liveRefreshToken(ctx, token)
	if err != nil || rec == nil {
		return inactive, err
	}
	return &oauthmeta.IntrospectionResponse{
		Active: true, Scope: oauthmeta.FormatScope(grant.Scopes), ClientID: rec.ClientID,
		Exp: rec.ExpiresAt.Unix(), Iat: rec.IssuedAt.Unix(), Sub: grant.Subject, Iss: e.issuer,
	}, nil
}

// accessTokenLive reports whether a verified access token's grant is still
// active and the token itself was not revoked.
func (e *introspection) accessTokenLive(ctx context.Context, c *accessClaims) (bool, error) {
	g, err := e.grants.Grant(ctx, grantIDFromJTI(c.JTI))
	if err != nil || g.Revoked {
		return false, ignoreNotFound(err)
	}
	// A delegated token ends with any token it was derived from.
	for _, jti := range append(slices.Clone(c.DelegatedFrom), c.JTI) {
		revoked, err := e.revocations.AccessTokenRevoked(ctx, jti)
		if err != nil || revoked {
			return false, err
		}
	}
	return true, nil
}

// liveRefreshToken returns the refresh token record and its grant if raw is
// a current (unrotated, unexpired, unrevoked) refresh token; nil if not.
func (e *introspection) liveRefreshToken(ctx context.Context, raw string) (*RefreshToken, *Grant, error) {
	rec, err := e.refresh.RefreshToken(ctx, tokenKey(raw))
	if err != nil {
		return nil, nil, ignoreNotFound(err)
	}
	g, err := e.grants.Grant(ctx, rec.GrantID)
	if err != nil {
		return nil, nil, ignoreNotFound(err)
	}
	now := e.clock.Now()
	if rec.Rotated || g.Revoked || !now.Before(rec.ExpiresAt) || !now.Before(g.ExpiresAt) {
		return nil, nil, nil
	}
	return rec, g, nil
}
