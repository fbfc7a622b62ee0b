package authserver

import (
	"context"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// exchangeDownstream is the RFC 8693 token exchange by which a resource
// server obtains a token for a [DownstreamAPI] to call it as the user: the
// subject token must be a live access token of ours whose "aud" holds
// the client's resource; the answer is a new JWT access token for the API
// alone, acting for the user (§4.1 "act"), with the scopes of
// downstreamScopes, living at most the API's TokenTTL and never beyond
// the subject token. It is a Bearer token: the token endpoint does not
// bind exchanged tokens to a DPoP key.
func (h *accessTokenExchange) exchangeDownstream(ctx context.Context, client *Client, api *DownstreamAPI, form url.Values) (*oauthmeta.TokenResponse, error) {
	resource, ok := api.Clients[client.ID]
	if !ok {
		return nil, oauthErr(oauthmeta.CodeInvalidTarget, "client may not ask for tokens for this resource")
	}
	now := h.clock.Now()
	claims, grant, oe := h.subject(ctx, form.Get("subject_token"), resource, now)
	if oe != nil {
		return nil, oe
	}
	scopes, oe := downstreamScopes(api, client, claims.Scope, form)
	if oe != nil {
		return nil, oe
	}
	if scopes, oe = h.policy().narrow(scopes); oe != nil {
		return nil, oe
	}
	exp := min(now.Add(api.TokenTTL).Unix(), claims.Expires)
	access, err := h.tokens.sign(ctx, &accessClaims{
		Issuer:   h.tokens.issuer,
		Subject:  claims.Subject,
		Audience: oauthmeta.Audience{api.Resource},
		ClientID: client.ID,
		Scope:    oauthmeta.FormatScope(scopes),
		IssuedAt: now.Unix(),
		Expires:  exp,
		// The grant's ID keeps introspection and revocation working:
		// once the grant is revoked, the token is no longer active.
		JTI: grant.ID + jtiSeparator + randomToken(12),
		Act: &oauthmeta.Actor{Subject: client.ID},
	}, now)
	if err != nil {
		return nil, err
	}
	h.log.InfoContext(ctx, "downstream token issued", "client_id", client.ID, "sub", claims.Subject,
		"resource", api.Resource, "scope", oauthmeta.FormatScope(scopes))
	return &oauthmeta.TokenResponse{
		AccessToken: access, IssuedTokenType: oauthmeta.TokenTypeAccessToken, TokenType: "Bearer",
		ExpiresIn: max(exp-now.Unix(), 1), Scope: oauthmeta.FormatScope(scopes),
	}, nil
}

// downstreamScopes returns the scopes of a token for api: the requested
// ones, each of which must be one the API accepts, carried by the subject
// token (its "scope", held) and within the exchanging client's ceiling;
// without "scope", every held scope that the API accepts and the client
// may have. No scope at all is invalid_scope too: a token for the API
// always says what it allows.
func downstreamScopes(api *DownstreamAPI, client *Client, held string, form url.Values) ([]string, *oauthmeta.Error) {
	have, err := oauthmeta.ParseScope(held)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token has a malformed scope")
	}
	usable := func(sc string) bool { return slices.Contains(api.Scopes, sc) && client.allowsScope(sc) }
	if !form.Has("scope") {
		out := slices.DeleteFunc(have, func(sc string) bool { return !usable(sc) })
		if len(out) == 0 {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "subject_token carries no scope this resource accepts")
		}
		return out, nil
	}
	want, err := oauthmeta.ParseScope(form.Get("scope"))
	if err != nil || len(want) == 0 {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "malformed scope")
	}
	for _, sc := range want {
		switch {
		case !usable(sc):
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not accepted by this resource for this client")
		case !slices.Contains(have, sc):
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not granted to the subject token")
		}
	}
	return want, nil
}
