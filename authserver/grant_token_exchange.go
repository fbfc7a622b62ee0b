package authserver

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// tokenExchange is the RFC 8693 token exchange grant handler. It serves
// two exchanges, told apart by subject_token_type: an access token of
// ours (accessTokenExchange: for the user's upstream token or a token
// for a downstream API) and, with [Config.IdentityProvider], an ID token
// for an ID-JAG (idjagExchange). A request naming another
// subject_token_type goes to the ID-JAG exchange when it is offered, else
// to the access-token exchange, and is refused by either's parameter
// checks. Exchanged tokens are Bearer tokens: the token endpoint checks
// no DPoP proof for this grant.
//
// A request naming an actor (actor_token) is a delegation, answered by
// the delegation exchange with [Config.Delegation] (its DPoP proof is
// checked, and binds the token) and refused without.
type tokenExchange struct {
	access     *accessTokenExchange // nil when not offered
	idjag      *idjagExchange       // nil without Config.IdentityProvider
	delegation *delegation          // nil without Config.Delegation
}

// offered reports whether any exchange is: the grant is registered
// only then.
func (h *tokenExchange) offered() bool {
	return h.access != nil || h.idjag != nil || h.delegation != nil
}

// grant dispatches the exchange by actor_token, then subject_token_type
// (see tokenExchange). client is nil only for a delegation without client
// authentication.
func (h *tokenExchange) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	if wantsDelegation(form) {
		if h.delegation == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "actor_token is not supported")
		}
		return h.delegation.exchange(ctx, client, form, jkt)
	}
	if client == nil {
		return nil, errUnknownClient
	}
	if h.idjag != nil && form.Get("subject_token_type") != oauthmeta.TokenTypeAccessToken {
		return h.idjag.exchange(ctx, client, form)
	}
	if h.access == nil {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type is not supported")
	}
	return h.access.exchange(ctx, client, form)
}

// vaultExchange is who may exchange our access tokens for the user's
// upstream access token ([Config.Vault]).
type vaultExchange struct {
	// issuers are the upstream providers' issuer identifiers, each a
	// target as "audience" or "resource" naming that provider.
	issuers []string
	// audience is [Config.VaultAudience], a target as "audience"
	// only, naming the provider of the grant; "" means none.
	audience string
	// resources maps the client_id of each resource server allowed the
	// exchange to its resource.
	resources map[string]string
	vault     Vault
}

// newVaultExchange returns the upstream token exchange of c, nil when
// it is not offered (no vault, or no resource server named).
func newVaultExchange(cfg *settings, upstreamIssuers []string, v Vault) *vaultExchange {
	if v == nil || len(cfg.VaultResourceServers) == 0 {
		return nil
	}
	return &vaultExchange{issuers: upstreamIssuers, audience: cfg.VaultAudience, resources: cfg.VaultResourceServers, vault: v}
}

// resourceOf returns the resource of a resource server allowed the
// upstream token exchange.
func (u *vaultExchange) resourceOf(clientID string) (string, bool) {
	if u == nil {
		return "", false
	}
	res, ok := u.resources[clientID]
	return res, ok
}

// target reports whether the exchange's target names an upstream
// provider: its issuer identifier (as "audience" or "resource"), returned
// as issuer, or the vault's Audience name (as "audience" only), which
// names the provider of the grant (issuer "").
func (u *vaultExchange) target(t string, asAudience bool) (issuer string, ok bool) {
	if u == nil {
		return "", false
	}
	if slices.Contains(u.issuers, t) {
		return t, true
	}
	return "", u.audience != "" && t == u.audience && asAudience
}

// accessTokenExchange is the RFC 8693 token exchange of one of our access
// tokens by the resource server that received it, for the user's upstream
// access token (upstream) or a token for a [DownstreamAPI] (downstream).
type accessTokenExchange struct {
	tokens      *accessTokens
	grants      GrantStore
	revocations RevocationStore
	vault       Vault          // nil without a token vault
	upstream    *vaultExchange // nil when not offered
	connect     *connector     // nil without Config.Connect
	downstream  downstreamAPIs
	// policy is the grant policy in force (nil: none), read at each
	// request.
	policy func() *compiledGrantPolicy
	clock  clock.Func
	log    *slog.Logger
}

// offered reports whether the token exchange of our access tokens is
// offered: for the upstream token, or for a downstream API.
func (h *accessTokenExchange) offered() bool {
	return h.upstream != nil || h.connect != nil || len(h.downstream) > 0
}

// exchange answers the exchange of one of our access tokens. The caller
// must be a pre-registered confidential client named in
// [Config.VaultResourceServers] or in a [DownstreamAPI]'s Clients;
// the single target ("audience" or "resource") names either the upstream
// provider, answered with the user's upstream access token
// (exchangeUpstreamToken), or a downstream API, answered with a new
// access token for it (exchangeDownstream).
func (h *accessTokenExchange) exchange(ctx context.Context, client *Client, form url.Values) (*oauthmeta.TokenResponse, error) {
	_, upstreamRS := h.upstream.resourceOf(client.ID)
	connectRS := h.connect.mayExchange(client.ID)
	if client.public() || (!upstreamRS && !connectRS && !h.downstream.exchanger(client.ID)) {
		return nil, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not exchange access tokens")
	}
	target, oe := checkExchangeParams(form)
	if oe != nil {
		return nil, oe
	}
	if issuer, ok := h.upstream.target(target, form.Has("audience")); ok {
		if !upstreamRS {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "client may not ask for this audience")
		}
		return h.exchangeUpstreamToken(ctx, client, issuer, form)
	}
	if p := h.connect.target(target, form.Has("audience")); p != nil {
		if !connectRS {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "client may not ask for this audience")
		}
		return h.exchangeConnected(ctx, client, p, form)
	}
	if api := h.downstream.lookup(target); api != nil {
		return h.exchangeDownstream(ctx, client, api, form)
	}
	return nil, oauthErr(oauthmeta.CodeInvalidTarget, "unknown audience")
}

// exchangeUpstreamToken is the RFC 8693 token exchange by which a resource
// server obtains the upstream provider's access token of the user whose
// MCP access token it received. The caller must be a pre-registered
// confidential client named in [Config.VaultResourceServers]; the
// subject token must be a live access token of ours whose "aud" holds
// that client's resource. The answer is the user's upstream access token,
// refreshed upstream first when it has expired: of the provider the user
// logged in at, which a target naming a provider's issuer must be.
func (h *accessTokenExchange) exchangeUpstreamToken(ctx context.Context, client *Client, issuer string, form url.Values) (*oauthmeta.TokenResponse, error) {
	resource, _ := h.upstream.resourceOf(client.ID)
	now := h.clock.Now()
	claims, grant, oe := h.subject(ctx, form.Get("subject_token"), resource, now)
	if oe != nil {
		return nil, oe
	}
	tok, err := h.upstream.vault.Token(ctx, grant, issuer)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "no upstream token for this grant; the user must log in again")
	case err != nil:
		if _, ok := errors.AsType[*oauthmeta.Error](err); ok {
			return nil, err // a store's or the vault's temporarily_unavailable
		}
		h.log.WarnContext(ctx, "upstream token refresh failed", "err", err)
		return nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
	}
	h.log.InfoContext(ctx, "upstream token exchanged", "client_id", client.ID, "sub", claims.Subject)
	resp := &oauthmeta.TokenResponse{
		AccessToken: tok.AccessToken, IssuedTokenType: oauthmeta.TokenTypeAccessToken, TokenType: "Bearer",
	}
	if !tok.Expiry.IsZero() {
		resp.ExpiresIn = max(int64(tok.Expiry.Sub(now)/time.Second), 1)
	}
	return resp, nil
}

// checkExchangeParams checks the RFC 8693 §2.1 parameters of an exchange
// of our access token: an access token as subject, no actor, an access
// token requested, and exactly one target, which it returns.
func checkExchangeParams(form url.Values) (string, *oauthmeta.Error) {
	switch {
	case form.Get("subject_token") == "":
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "subject_token is required")
	case form.Get("subject_token_type") != oauthmeta.TokenTypeAccessToken:
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type must be "+oauthmeta.TokenTypeAccessToken)
	case form.Has("actor_token") || form.Has("actor_token_type"):
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "actor_token is not supported")
	case form.Get("requested_token_type") != "" && form.Get("requested_token_type") != oauthmeta.TokenTypeAccessToken:
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "requested_token_type must be "+oauthmeta.TokenTypeAccessToken)
	}
	targets := append(slices.Clone(form["audience"]), form["resource"]...)
	switch {
	case len(targets) == 0:
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "audience is required")
	case len(targets) > 1:
		return "", oauthErr(oauthmeta.CodeInvalidTarget, "one audience only")
	}
	return targets[0], nil
}

// subject verifies the subject token of an exchange by the resource
// server whose resource is resource: a live access token of ours whose
// "aud" holds resource, not itself issued by an exchange (no "act":
// exchanges do not chain), of a live grant, which it returns.
func (h *accessTokenExchange) subject(ctx context.Context, raw, resource string, now time.Time) (*accessClaims, *Grant, *oauthmeta.Error) {
	claims, err := h.tokens.parse(raw, now)
	if err != nil {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is not a valid access token of this server")
	}
	if !hasResource(claims.Audience, resource) {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token was issued for another resource")
	}
	if claims.Act != nil {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token was itself issued by a token exchange")
	}
	grant, oe := h.liveGrantOf(ctx, claims, now)
	if oe != nil {
		return nil, nil, oe
	}
	return claims, grant, nil
}

// liveGrantOf returns the grant of a verified access token if the token
// and its grant are live; a revoked or expired grant's upstream tokens are
// deleted on the way.
func (h *accessTokenExchange) liveGrantOf(ctx context.Context, c *accessClaims, now time.Time) (*Grant, *oauthmeta.Error) {
	bad := oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is expired or revoked")
	g, err := h.grants.Grant(ctx, grantIDFromJTI(c.JTI))
	if errors.Is(err, ErrNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, h.storeFailure(ctx, err)
	}
	if g.Revoked || !now.Before(g.ExpiresAt) {
		if h.vault != nil {
			h.vault.Drop(ctx, g.UpstreamTokens)
		}
		return nil, bad
	}
	revoked, err := h.revocations.AccessTokenRevoked(ctx, c.JTI)
	if err != nil {
		return nil, h.storeFailure(ctx, err)
	}
	if revoked {
		return nil, bad
	}
	return g, nil
}

// storeFailure is the protocol error for a failed store call: the store's
// own (temporarily_unavailable), else a logged server_error.
func (h *accessTokenExchange) storeFailure(ctx context.Context, err error) *oauthmeta.Error {
	if oe, ok := errors.AsType[*oauthmeta.Error](err); ok {
		return oe
	}
	h.log.ErrorContext(ctx, "token exchange: store failed", "err", err)
	return oauthErr(oauthmeta.CodeServerError, "internal error")
}
