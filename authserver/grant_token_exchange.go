package authserver

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// tokenTypeAccessToken is the RFC 8693 §3 token type of an access token.
const tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// exchanges reports whether the upstream token exchange is offered.
func (v *vault) exchanges() bool { return v != nil && len(v.resources) > 0 }

// exchangesAccessTokens reports whether the token exchange of our access
// tokens is offered: for the upstream token, or for a downstream API.
func (s *Server) exchangesAccessTokens() bool { return s.vault.exchanges() || len(s.downstream) > 0 }

// exchangeAccessToken is the RFC 8693 token exchange of one of our access
// tokens by the resource server that received it. The caller must be a
// pre-registered confidential client named in
// [TokenVaultConfig.ResourceServers] or in a [DownstreamAPI]'s Clients;
// the single target ("audience" or "resource") names either the upstream
// provider, answered with the user's upstream access token
// (exchangeUpstreamToken), or a downstream API, answered with a new
// access token for it (exchangeDownstream).
func (s *Server) exchangeAccessToken(ctx context.Context, client *Client, form url.Values) (*oauthmeta.TokenResponse, error) {
	if !s.exchangesAccessTokens() {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type is not supported")
	}
	_, upstreamRS := s.vault.resourceOf(client.ID)
	if client.public() || (!upstreamRS && !s.downstream.exchanger(client.ID)) {
		return nil, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not exchange access tokens")
	}
	target, oe := checkExchangeParams(form)
	if oe != nil {
		return nil, oe
	}
	if s.upstreamTarget(target, form.Has("audience")) {
		if !upstreamRS {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "client may not ask for this audience")
		}
		return s.exchangeUpstreamToken(ctx, client, form)
	}
	if api := s.downstream.lookup(target); api != nil {
		return s.exchangeDownstream(ctx, client, api, form)
	}
	return nil, oauthErr(oauthmeta.CodeInvalidTarget, "unknown audience")
}

// resourceOf returns the resource of a resource server allowed the
// upstream token exchange.
func (v *vault) resourceOf(clientID string) (string, bool) {
	if !v.exchanges() {
		return "", false
	}
	res, ok := v.resources[clientID]
	return res, ok
}

// upstreamTarget reports whether the exchange's target names the upstream
// provider: its issuer identifier (as "audience" or "resource"), or the
// vault's Audience name (as "audience" only).
func (s *Server) upstreamTarget(t string, asAudience bool) bool {
	if !s.vault.exchanges() {
		return false
	}
	return t == s.upstream.cfg.Issuer || (s.vault.audience != "" && t == s.vault.audience && asAudience)
}

// exchangeUpstreamToken is the RFC 8693 token exchange by which a resource
// server obtains the upstream provider's access token of the user whose
// MCP access token it received. The caller must be a pre-registered
// confidential client named in [TokenVaultConfig.ResourceServers]; the
// subject token must be a live access token of ours whose "aud" holds
// that client's resource. The answer is the user's upstream access token,
// refreshed upstream first when it has expired.
func (s *Server) exchangeUpstreamToken(ctx context.Context, client *Client, form url.Values) (*oauthmeta.TokenResponse, error) {
	resource, _ := s.vault.resourceOf(client.ID)
	now := s.clock.Now()
	claims, grant, oe := s.exchangeSubject(ctx, form.Get("subject_token"), resource, now)
	if oe != nil {
		return nil, oe
	}
	tok, err := s.vault.token(ctx, grant)
	switch {
	case errors.Is(err, errVaultEmpty), errors.Is(err, errUpstreamEnded):
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "no upstream token for this grant; the user must log in again")
	case errors.Is(err, errVaultBusy):
		return nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the upstream token is being refreshed; try again")
	case err != nil:
		if _, ok := errors.AsType[*oauthmeta.Error](err); ok {
			return nil, err // a store's temporarily_unavailable
		}
		s.log.WarnContext(ctx, "upstream token refresh failed", "err", err)
		return nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the identity provider is unavailable")
	}
	s.log.InfoContext(ctx, "upstream token exchanged", "client_id", client.ID, "sub", claims.Subject)
	resp := &oauthmeta.TokenResponse{
		AccessToken: tok.AccessToken, IssuedTokenType: tokenTypeAccessToken, TokenType: "Bearer",
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
	case form.Get("subject_token_type") != tokenTypeAccessToken:
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type must be "+tokenTypeAccessToken)
	case form.Has("actor_token") || form.Has("actor_token_type"):
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "actor_token is not supported")
	case form.Get("requested_token_type") != "" && form.Get("requested_token_type") != tokenTypeAccessToken:
		return "", oauthErr(oauthmeta.CodeInvalidRequest, "requested_token_type must be "+tokenTypeAccessToken)
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

// exchangeSubject verifies the subject token of an exchange by the
// resource server whose resource is resource: a live access token of
// ours whose "aud" holds resource, not itself issued by an exchange (no
// "act": exchanges do not chain), of a live grant, which it returns.
func (s *Server) exchangeSubject(ctx context.Context, raw, resource string, now time.Time) (*accessClaims, *Grant, *oauthmeta.Error) {
	claims, err := s.parseAccessToken(raw, now)
	if err != nil {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is not a valid access token of this server")
	}
	if !hasResource(claims.Audience, resource) {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token was issued for another resource")
	}
	if claims.Act != nil {
		return nil, nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token was itself issued by a token exchange")
	}
	grant, oe := s.liveGrantOf(ctx, claims, now)
	if oe != nil {
		return nil, nil, oe
	}
	return claims, grant, nil
}

// liveGrantOf returns the grant of a verified access token if the token
// and its grant are live; a revoked or expired grant's upstream tokens are
// deleted on the way.
func (s *Server) liveGrantOf(ctx context.Context, c *accessClaims, now time.Time) (*Grant, *oauthmeta.Error) {
	bad := oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is expired or revoked")
	g, err := s.store.Grants.Grant(ctx, grantIDFromJTI(c.JTI))
	if errors.Is(err, ErrNotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, s.storeFailure(ctx, err)
	}
	if g.Revoked || !now.Before(g.ExpiresAt) {
		s.vault.drop(ctx, g.UpstreamTokens)
		return nil, bad
	}
	revoked, err := s.store.Revocations.AccessTokenRevoked(ctx, c.JTI)
	if err != nil {
		return nil, s.storeFailure(ctx, err)
	}
	if revoked {
		return nil, bad
	}
	return g, nil
}

// storeFailure is the protocol error for a failed store call: the store's
// own (temporarily_unavailable), else a logged server_error.
func (s *Server) storeFailure(ctx context.Context, err error) *oauthmeta.Error {
	if oe, ok := errors.AsType[*oauthmeta.Error](err); ok {
		return oe
	}
	s.log.ErrorContext(ctx, "token exchange: store failed", "err", err)
	return oauthErr(oauthmeta.CodeServerError, "internal error")
}
