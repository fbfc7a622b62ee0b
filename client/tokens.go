package client

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
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
// tokens are keyed by (issuer, resource, client) (requirement CL-19). It
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
// (with a rotated refresh token, requirement CL-20). A refused refresh
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
				// The refresh token is bound to the refused client: the
				// token and the registration go, and the next
				// authorization registers anew.
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

// TokenSource returns an oauth2.TokenSource for the MCP server at
// serverURL, for code written against golang.org/x/oauth2. Token returns
// the stored token, refreshed when it expires, after a [Client.Login] when
// there is none (which may involve the user); ctx bounds those calls. The
// Client keeps the refresh token. Requests made with these tokens lack
// [Client.Transport]'s handling of 401 and 403 and of redirects, and a
// DPoP-bound token, which needs a proof per request, is refused
// ([ErrDPoPTransport]).
func (c *Client) TokenSource(ctx context.Context, serverURL string) oauth2.TokenSource {
	return tokenSourceFunc(func() (*oauth2.Token, error) {
		if err := c.Login(ctx, serverURL); err != nil {
			return nil, err
		}
		resource, _ := c.canonicalResource(serverURL) // Login checked it
		tok, err := c.currentToken(ctx, resource)
		switch {
		case err != nil:
			return nil, err
		case tok == nil:
			return nil, fmt.Errorf("%w: no token after authorization", ErrAuthorizer)
		case ascii.EqualFold(tok.TokenType, dpop.TokenType):
			return nil, ErrDPoPTransport
		}
		return bearerToken(tok), nil
	})
}

type tokenSourceFunc func() (*oauth2.Token, error)

func (f tokenSourceFunc) Token() (*oauth2.Token, error) { return f() }

// bearerToken is what x/oauth2 code sees of a Bearer tok.
func bearerToken(tok *tokenstore.Token) *oauth2.Token {
	return &oauth2.Token{AccessToken: tok.AccessToken, TokenType: "Bearer", Expiry: tok.Expiry}
}
