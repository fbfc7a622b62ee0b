package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxRevocationResponse caps a revocation response body: a success has no
// meaningful body (RFC 7009 §2.2), an error a short JSON object.
const maxRevocationResponse = 64 << 10

// revokeTokens revokes tok at the authorization server of st (RFC 7009
// §2.1) when its metadata names a revocation_endpoint: the refresh token
// first, since revoking it ends the grant and, at most servers, the
// access tokens issued from it (§2.1), then the access token, in case the
// server does not. Each request is bounded by Config.Timeout, goes only to
// the endpoint discovery validated, follows no redirect and carries the
// client authentication of the token endpoint. Both are tried; the result
// joins their failures, each wrapping ErrRevocation.
func (c *Client) revokeTokens(ctx context.Context, st *tokenState, tok *tokenstore.Token) error {
	md := st.d.AuthServer
	if md == nil || md.RevocationEndpoint == "" {
		return nil
	}
	auth := c.tokenEndpointAuth(st)
	if auth == nil {
		return fmt.Errorf("%w: no client identity to revoke with", ErrRevocation)
	}
	var errs []error
	for _, t := range []struct{ token, hint string }{
		{tok.RefreshToken, oauthmeta.TokenTypeHintRefreshToken},
		{tok.AccessToken, oauthmeta.TokenTypeHintAccessToken},
	} {
		if t.token == "" {
			continue
		}
		if err := c.revoke(ctx, md, auth, t.token, t.hint); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrRevocation, t.hint, err))
		}
	}
	return errors.Join(errs...)
}

// revoke sends one RFC 7009 revocation request for token. Status 200 is
// success whatever the body (§2.2); anything else is a failure, with the
// server's error (§2.2.1) when it sent one, cleaned of what was sent.
func (c *Client) revoke(ctx context.Context, md *oauthmeta.AuthServerMetadata, auth *clientAuth, token, hint string) error {
	a, err := auth.encode(md.Issuer)
	if err != nil {
		return err
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	authorization := a.addTo(form)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsafeURL, err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, respHeader, body, err := c.post(req, maxRevocationResponse)
	if err != nil {
		return err
	}
	if status == http.StatusOK {
		return nil
	}
	if oe, perr := oauthmeta.ParseError(body); perr == nil && jsonContent(respHeader) {
		return fmt.Errorf("status %d: %w", status, sanitizeError(oe, append(a.sent, token)...))
	}
	return fmt.Errorf("status %d", status)
}

// tokenEndpointAuth returns how the client authenticates for st's tokens
// at their authorization server: the configured Grant's credentials, else
// its registration's. Nil means it has no client identity there (a
// WorkloadIdentity without a ClientID).
func (c *Client) tokenEndpointAuth(st *tokenState) *clientAuth {
	if c.flow != nil {
		a := c.flow.authentication()
		if a.clientID == "" {
			return nil
		}
		return a
	}
	return registeredAuth(st.reg, st.d.AuthServer)
}
