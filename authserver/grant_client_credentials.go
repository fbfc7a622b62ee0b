package authserver

import (
	"context"
	"net/url"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// clientCredentialsGrant is the client_credentials grant handler.
type clientCredentialsGrant struct {
	scopes    *scopePolicy
	resources *resourcePolicy
	ledger    *grantLedger
}

// grant is the client credentials grant (OAuth 2.1 §4.2): a confidential
// client obtains a token for itself (sub = client_id), for the requested
// resources (each checked, requirement AS-08; none means DefaultResource)
// and scopes. No refresh token is issued (RFC 6749 §4.4.3).
func (h *clientCredentialsGrant) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	if client == nil || client.public() {
		return nil, oauthErr(oauthmeta.CodeUnauthorizedClient, "client_credentials needs an authenticated confidential client")
	}
	scopes, oe := h.scopes.grantable(client, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	if oe := h.resources.checkAll(form["resource"]); oe != nil {
		return nil, oe
	}
	return h.ledger.standalone(ctx, client.ID, client.ID, scopes, form["resource"], jkt)
}
