package authserver

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// exchangeConnected is the RFC 8693 token exchange by which a resource
// server obtains the user's access token at a [ConnectProvider] the user
// connected. The caller must be a pre-registered confidential client
// named in [Config.VaultResourceServers]; the subject token a live access
// token of ours whose "aud" holds that client's resource. The answer is
// the provider's access token, refreshed there first when due; when the
// user has no live connection, invalid_grant with a connect URI
// ([oauthmeta.Error.ConnectURI]) naming a fresh single-use reference bound
// to the user, the MCP client, the caller and the provider.
func (h *accessTokenExchange) exchangeConnected(ctx context.Context, client *Client, p *connectProvider, form url.Values) (*oauthmeta.TokenResponse, error) {
	resource := h.connect.resources[client.ID]
	now := h.clock.Now()
	_, grant, oe := h.subject(ctx, form.Get("subject_token"), resource, now)
	if oe != nil {
		return nil, oe
	}
	tok, err := h.connect.token(ctx, grant.Subject, p)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, h.connect.notConnected(ctx, client.ID, grant, p)
	case err != nil:
		if _, ok := errors.AsType[*oauthmeta.Error](err); ok {
			return nil, err // a store's or the vault's temporarily_unavailable
		}
		h.log.WarnContext(ctx, "connected account token refresh failed", "provider", p.name, "err", err)
		return nil, oauthErr(oauthmeta.CodeTemporarilyUnavailable, "the provider is unavailable")
	}
	h.log.InfoContext(ctx, "connected account token exchanged", "provider", p.name, "client_id", client.ID, "sub", grant.Subject)
	resp := &oauthmeta.TokenResponse{
		AccessToken: tok.AccessToken, IssuedTokenType: oauthmeta.TokenTypeAccessToken, TokenType: "Bearer",
	}
	if !tok.Expiry.IsZero() {
		resp.ExpiresIn = max(int64(tok.Expiry.Sub(now)/time.Second), 1)
	}
	return resp, nil
}
