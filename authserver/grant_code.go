package authserver

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// errBadCode is the one answer for every unusable code, so a caller learns
// nothing about which check failed.
func errBadCode(desc string) error { return oauthErr(oauthmeta.CodeInvalidGrant, desc) }

// codeGrant is the authorization_code grant handler.
type codeGrant struct {
	codes  CodeStore
	grants GrantStore
	ledger *grantLedger
	vault  Vault // nil without a token vault
	clock  clock.Func
	log    *slog.Logger
	// accessTTL and refreshTTL are the lifetimes of a grant without and
	// with refresh tokens.
	accessTTL, refreshTTL time.Duration
}

// grant redeems an authorization code (OAuth 2.1 §4.1.3, requirement
// AS-09). The code must be unexpired and bound to this client (CIMD-09),
// redirect URI and PKCE verifier (AS-04); a requested resource must be
// within the authorization (AS-08). A second valid redemption revokes the
// grant of the first; a replay with a wrong verifier revokes nothing.
//
// jkt is the thumbprint of the request's DPoP proof key, "" without one:
// the access token is bound to it, and for a public client the grant (and
// so every refresh token of it) as well (RFC 9449 §5).
func (h *codeGrant) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	code := form.Get("code")
	if code == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "code is required")
	}
	key := tokenKey(code)
	rec, err := h.codes.Code(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, errBadCode("unknown authorization code")
	}
	if err != nil {
		return nil, err
	}
	now := h.clock.Now()
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
		return nil, h.replayed(ctx, rec.RedeemedBy)
	}
	grant := &Grant{
		ID: randomToken(16), ClientID: client.ID, Subject: rec.Subject,
		Scopes: rec.Scopes, Resources: rec.Resources, CreatedAt: now,
		ExpiresAt: now.Add(h.accessTTL), UpstreamTokens: rec.UpstreamTokens,
	}
	if client.public() {
		grant.DPoPJKT = jkt
	}
	if rec.Refresh {
		grant.ExpiresAt = now.Add(h.refreshTTL)
	}
	if err := h.grants.SaveGrant(ctx, grant); err != nil {
		return nil, err
	}
	if first, err := h.codes.RedeemCode(ctx, key, grant.ID); err != nil {
		_ = h.grants.RevokeGrant(ctx, grant.ID)
		if errors.Is(err, ErrAlreadyUsed) {
			return nil, h.replayed(ctx, first.RedeemedBy)
		}
		return nil, err
	}
	h.bindUpstreamTokens(ctx, grant)
	return h.ledger.issue(ctx, grant, rec.Scopes, resources, rec.Refresh, now, jkt)
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

// replayed revokes the grant created by the first redemption (OAuth 2.1
// §4.1.3: the tokens previously issued from the code SHOULD be revoked).
func (h *codeGrant) replayed(ctx context.Context, grantID string) error {
	h.log.WarnContext(ctx, "authorization code used twice; revoking the grant it produced")
	if err := h.ledger.revoke(ctx, grantID); err != nil {
		return err
	}
	return errBadCode("authorization code was already used")
}

// bindUpstreamTokens hands the vault record of a redeemed code to its new
// grant. A failure is logged and leaves the grant without upstream
// tokens: the login itself succeeds, the token exchange will answer
// invalid_grant.
func (h *codeGrant) bindUpstreamTokens(ctx context.Context, g *Grant) {
	if h.vault == nil || g.UpstreamTokens == "" {
		return
	}
	if err := h.vault.Bind(ctx, g.UpstreamTokens, g); err != nil {
		h.log.WarnContext(ctx, "binding upstream tokens to the grant failed", "err", err)
	}
}
