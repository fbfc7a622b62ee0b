package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"golang.org/x/oauth2"
)

// tokenState is what the store knows about one MCP server's token.
type tokenState struct {
	d   *tokenstore.Discovery
	reg *tokenstore.Registration
	key tokenstore.Key
	tok *tokenstore.Token // nil when none is stored
}

// tokenState looks up the token for resource (canonical) through the
// discovery state (which issuer) and the registration (which client):
// tokens are keyed by (issuer, resource, client). It
// returns nil when discovery or registration never happened.
func (c *Client) tokenState(ctx context.Context, resource string) (*tokenState, error) {
	d, err := c.store.Discovery(ctx, resource)
	if errors.Is(err, tokenstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	reg := c.currentRegistration(ctx, d.Issuer)
	if reg == nil || d.AuthServer == nil {
		return nil, nil
	}
	st := &tokenState{d: d, reg: reg, key: tokenstore.Key{Issuer: d.Issuer, Resource: d.ResourceIndicator, ClientID: reg.ClientID}}
	st.tok, err = c.store.Token(ctx, st.key)
	if errors.Is(err, tokenstore.ErrNotFound) {
		return st, nil
	}
	if err == nil && !c.tokenUsable(st.tok) {
		st.tok = nil // bound to a DPoP key this client does not hold
	}
	return st, err
}

// currentToken returns a token for resource that can be sent now, without
// user interaction: the stored one, or a refreshed one when it expired.
// It returns nil, nil when there is none (the request then goes out
// without credentials, and the 401 starts an authorization).
func (c *Client) currentToken(ctx context.Context, resource string) (*tokenstore.Token, error) {
	st, err := c.tokenState(ctx, resource)
	if err != nil || st == nil || st.tok == nil {
		return nil, err
	}
	if st.tok.Valid(c.clock.Now(), expiryLeeway) {
		return st.tok, nil
	}
	if st.tok.RefreshToken == "" {
		return nil, nil
	}
	tok, err := c.refresh(ctx, st, false)
	if errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) || errors.Is(err, errRegistrationDropped) {
		return nil, nil // the grant (or client) is gone; a new authorization follows the 401
	}
	return tok, err
}

// refresh renews st's token, once for all concurrent callers, holding the
// store's cross-process lock when it has one, and persists the result
// (with a rotated refresh token). A refused refresh
// token is deleted.
func (c *Client) refresh(ctx context.Context, st *tokenState, afterRejection bool) (*tokenstore.Token, error) {
	return c.refreshOnce(ctx, st.key, func() (*tokenstore.Token, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*c.cfg.Timeout)
		defer cancel()
		if l, ok := c.store.(tokenstore.Locker); ok {
			unlock, err := l.Lock(ctx, st.key)
			if err != nil {
				return nil, err
			}
			defer unlock()
		}
		old, err := c.store.Token(ctx, st.key)
		if err != nil {
			return nil, err
		}
		if old.AccessToken != st.tok.AccessToken && old.Valid(c.clock.Now(), expiryLeeway) {
			return old, nil // refreshed meanwhile by another goroutine or process
		}
		if old.RefreshToken == "" {
			return nil, errNoRefreshToken
		}
		tok, err := c.refreshToken(ctx, st.d, st.reg, old)
		if err != nil {
			c.log.WarnContext(ctx, "token refresh failed", "issuer", st.key.Issuer, "error", err)
			switch {
			case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}):
				_ = c.store.DeleteToken(ctx, st.key)
			case refusedClient(err) && st.reg.Method == tokenstore.MethodDynamic:
				// The refresh token is bound to the refused
				// client: the token and the registration go,
				// and the next authorization registers anew.
				_ = c.store.DeleteToken(ctx, st.key)
				c.dropRegistration(ctx, st.reg)
				return nil, fmt.Errorf("%w: %w", errRegistrationDropped, err)
			}
			return nil, err
		}
		tok.RefreshedAfterRejection = afterRejection
		if err := c.store.PutToken(ctx, st.key, tok); err != nil {
			return nil, err
		}
		c.log.DebugContext(ctx, "token refreshed", "issuer", st.key.Issuer, "token", tok)
		return tok, nil
	})
}

var errNoRefreshToken = errors.New("client: no refresh token")

// errRegistrationDropped: a refresh was refused with invalid_client, and
// the dynamic registration and token it used were deleted.
var errRegistrationDropped = errors.New("client: the dynamic registration was refused and dropped")

type tokenSourceFunc func() (*oauth2.Token, error)

func (f tokenSourceFunc) Token() (*oauth2.Token, error) { return f() }

// bearerToken is what x/oauth2 code sees of a Bearer tok.
func bearerToken(tok *tokenstore.Token) *oauth2.Token {
	return &oauth2.Token{AccessToken: tok.AccessToken, TokenType: "Bearer", Expiry: tok.Expiry}
}

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
		return fmt.Errorf("%w: %w", reason(ErrRevocation, reasonUnsafeURL), err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, respHeader, body, err := c.post(ErrRevocation, req, maxRevocationResponse)
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

// refreshOnce runs fn once for all concurrent callers with the same key
// (x/sync/singleflight), each getting its own copy of the token. A waiter
// gives up when its own ctx ends; the call itself continues for the others.
func (c *Client) refreshOnce(ctx context.Context, key tokenstore.Key, fn func() (*tokenstore.Token, error)) (*tokenstore.Token, error) {
	k := key.Issuer + "\x00" + key.Resource + "\x00" + key.ClientID
	tok, err := flight.Do(ctx, &c.refreshes, k, fn)
	return tok.Clone(), err
}
