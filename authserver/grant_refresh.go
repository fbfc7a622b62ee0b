package authserver

import (
	"context"
	"errors"
	"log/slog"
	"net/url"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// refreshGrant is the refresh_token grant handler.
type refreshGrant struct {
	grants  GrantStore
	refresh RefreshTokenStore
	// user is the store's one-step refresh, nil when the grants and
	// refresh tokens live in different stores or the store has none.
	user   RefreshTokenUser
	tokens *accessTokens
	ledger *grantLedger
	// policy is the grant policy in force (nil: none), read at each
	// request.
	policy func() *compiledGrantPolicy
	clock  clock.Func
	log    *slog.Logger
}

// oneStepRefresh returns the store's [RefreshTokenUser] when it keeps both
// the grants and the refresh tokens, nil otherwise.
func oneStepRefresh(grants GrantStore, refresh RefreshTokenStore) RefreshTokenUser {
	user, ok := refresh.(RefreshTokenUser)
	if !ok || any(grants) != any(refresh) {
		return nil
	}
	return user
}

// grant exchanges a refresh token (OAuth 2.1 §4.3, requirement AS-12).
// Every use rotates the token; presenting a rotated one again is reuse and
// revokes the whole grant, so the thief and the victim both lose the family.
// The scope may only narrow, and a requested resource must be within the
// grant.
//
// A grant bound to a DPoP key (a public client's, RFC 9449 §5) is refreshed
// only with a proof of that key, jkt.
func (h *refreshGrant) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	raw := form.Get("refresh_token")
	if raw == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "refresh_token is required")
	}
	u := RefreshUse{Key: tokenKey(raw), ClientID: client.ID, JKT: jkt, Now: h.clock.Now()}
	if resp, err := h.inOneStep(ctx, u, form); resp != nil || err != nil {
		return resp, err
	}
	rec, err := h.refresh.RefreshToken(ctx, u.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, errRefreshInvalid()
	}
	if err != nil {
		return nil, err
	}
	grant, err := h.grants.Grant(ctx, rec.GrantID)
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
		return nil, h.reused(ctx, grant.ID)
	}
	scopes, oe := narrowScopes(grant.Scopes, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	if scopes, oe = h.policy().narrow(scopes); oe != nil {
		return nil, oe
	}
	resources, oe := narrowResources(grant.Resources, form["resource"])
	if oe != nil {
		return nil, oe
	}
	access, err := h.tokens.issue(ctx, grant, scopes, resources, u.Now, jkt)
	if err != nil {
		return nil, err
	}
	next := randomToken(32)
	err = h.refresh.RotateRefreshToken(ctx, rec.Key, &RefreshToken{
		Key: tokenKey(next), GrantID: grant.ID, ClientID: client.ID, IssuedAt: u.Now, ExpiresAt: grant.ExpiresAt,
	})
	if errors.Is(err, ErrAlreadyUsed) {
		return nil, h.reused(ctx, grant.ID)
	}
	if err != nil {
		return nil, err
	}
	return h.tokens.response(access, next, scopes, jkt), nil
}

// inOneStep is the common refresh in one store call
// ([RefreshTokenUser]): the request keeps the grant's scopes and
// resources and no grant policy may narrow them, so nothing the grant
// holds can fail the request once the store accepted the token. The
// signing key is fetched first, so nothing that may fail comes after the
// rotation. It returns nil, nil when it does not apply or the store refused
// the token; the caller then reads the records and answers why.
func (h *refreshGrant) inOneStep(ctx context.Context, u RefreshUse, form url.Values) (*oauthmeta.TokenResponse, error) {
	if h.user == nil || form.Has("scope") || form.Has("resource") || h.policy() != nil {
		return nil, nil
	}
	key, err := h.tokens.signingKey(ctx, u.Now)
	if err != nil {
		return nil, err
	}
	next := randomToken(32)
	u.NextKey = tokenKey(next)
	grant, err := h.user.UseRefreshToken(ctx, u)
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	access, err := signClaims(key, h.tokens.claims(grant, grant.Scopes, grant.Resources, u.Now, u.JKT))
	if err != nil {
		return nil, err
	}
	return h.tokens.response(access, next, grant.Scopes, u.JKT), nil
}

// boundKey returns the DPoP key thumbprint a refresh request's grant is
// already bound to, before its proof is checked: the key of the refresh
// token's grant when the token exists and belongs to client; ""
// otherwise (grant then refuses the request with its own error).
func (h *refreshGrant) boundKey(ctx context.Context, client *Client, form url.Values) string {
	raw := form.Get("refresh_token")
	if raw == "" {
		return ""
	}
	rec, err := h.refresh.RefreshToken(ctx, tokenKey(raw))
	if err != nil || rec.ClientID != client.ID {
		return ""
	}
	g, err := h.grants.Grant(ctx, rec.GrantID)
	if err != nil {
		return ""
	}
	return g.DPoPJKT
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
	case g.DPoPJKT != u.JKT: // also checked before the proof's jti is recorded (dpopChecker.check)
		return errRefreshOtherKey()
	}
	return nil
}

// errRefreshInvalid refuses a refresh token that is unknown, expired or
// revoked, without saying which.
func errRefreshInvalid() *oauthmeta.Error {
	return oauthErr(oauthmeta.CodeInvalidGrant, "refresh token is invalid, expired or revoked")
}

// reused revokes the family of a refresh token used twice (OAuth 2.1
// §4.3.1, RFC 9700 §4.14.2).
func (h *refreshGrant) reused(ctx context.Context, grantID string) error {
	h.log.WarnContext(ctx, "rotated refresh token used again; revoking its grant")
	if err := h.ledger.revoke(ctx, grantID); err != nil {
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
