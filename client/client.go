package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// Client is an MCP host's OAuth client: it discovers the authorization
// server of an MCP server from a 401 or 403, registers, authorizes with
// PKCE and RFC 9207 checks, and keeps, refreshes and steps up tokens. Use
// it through [Client.Transport] (an http.RoundTripper) or
// [Client.OAuthHandler] (the official Go SDK's auth.OAuthHandler).
//
// On a 401 it does, in order:
//
//  1. It parses the WWW-Authenticate header (RFC 9110 §11.6.1, RFC 6750
//     §3, RFC 9728 §5.1).
//  2. It fetches protected resource metadata from the challenge's
//     resource_metadata URL, else the path-inserted well-known URL, else
//     the root one, stopping at the first document served. Its "resource"
//     must be identical to the URL called (for the root document, its
//     origin; see [Config.InsecureAllowResourcePrefix]), or authorization
//     stops (RFC 9728 §3.3).
//  3. Each listed authorization server, in the order
//     [Config.SelectAuthServer] gives, has its metadata fetched in the MCP
//     order (RFC 8414 path insertion, OpenID Connect path insertion, OpenID
//     Connect appended); the first whose issuer is identical to the one
//     asked for, whose endpoints are https and which advertises S256 (or
//     omits the field, with [AuthServerOptions].AssumeS256) is used. Results are cached in the store for the documents' max-age
//     (default [DefaultMetadataTTL]).
//  4. It registers in MCP's order: credentials pre-registered for exactly
//     this issuer; a registration stored from an earlier run; the Client ID
//     Metadata Document URL when the server supports it; RFC 7591 dynamic
//     registration with application_type. Credentials are bound to their
//     issuer and never shown to another. A stored dynamic registration the
//     token endpoint refuses with invalid_client (the server deleted it) is
//     dropped with its token and replaced once per operation; the refused
//     code or refresh token is not sent again.
//  5. The [Authorizer] gets the user through the authorization request:
//     PKCE S256, a single-use state whose record holds the verifier,
//     issuer, token endpoint, resource, redirect URI and scopes before the
//     redirect; "resource" on every request (unless
//     [AuthServerOptions].OmitResource); scopes from the challenge, else the
//     resource's scopes_supported, else none, with the issuer's
//     [AuthServerOptions].ResourceScopes; offline_access only if the
//     authorization server lists it.
//  6. The response is checked: state, then the RFC 9207 iss table with
//     simple string comparison, before the code or any error text is used;
//     the code is redeemed only at the recorded token endpoint.
//
// A refused token is refreshed first (with "resource", unless
// [AuthServerOptions.OmitResource] or [AuthServerOptions.OmitResourceOnRefresh]) unless the challenge needs
// scopes the grant lacks; a 403 insufficient_scope re-authorizes with the
// union of the previously requested and the challenged scopes, unless the
// refused token already carries them all. One operation starts at most
// [MaxAuthorizationAttempts] authorizations.
//
// Every token request goes through golang.org/x/oauth2 with an explicit
// AuthStyle (no retry with the secret moved; with client_secret_basic,
// client_id is also in the body). A response must be one strict JSON
// object of at most 1 MiB with token_type Bearer, or DPoP when the request
// carried a proof. Every document, registration and token request goes
// through one SSRF-guarded fetcher: https only, addresses checked at dial
// time after resolution, no proxies, size caps and timeouts. Tokens go
// only to the MCP server they were issued for, in the Authorization
// header, never across a redirect to another origin; token and
// registration requests follow no redirect at all. No error or log record
// contains a token, secret, code or verifier.
//
// A Client is safe for concurrent use. Constructing one does no I/O and
// starts no goroutine; everything happens inside calls that take a
// context. It does not host its Client ID Metadata Document (see package
// clientmeta) nor speak MCP itself.
type Client struct {
	cfg     Config
	store   tokenstore.Store
	fetcher *safehttp.Fetcher
	policy  oauthmeta.URLPolicy
	log     *slog.Logger

	clock     clock.Func
	pending   *lru.Cache[string, *pendingAuthorization] // by state
	refreshes singleflight.Group                        // by token key
	logins    *keyedMutex
	dpop      *dpopState // nil without Config.DPoP
	flow      grantFlow  // nil without Config.Grant
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:    cfg,
		clock:  cfg.Now,
		store:  cfg.Store,
		policy: oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback},
		log:    cfg.Logger,
		logins: newKeyedMutex(),
	}
	if c.store == nil {
		c.store = tokenstore.NewMemory()
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	opts := safehttp.Options{
		TLSConfig:                 cfg.TLSConfig,
		InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback,
		Timeout:                   cfg.Timeout,
		UserAgent:                 cfg.UserAgent,
	}
	nethook.Of(&cfg).Apply(&opts)
	c.fetcher = safehttp.New(opts)
	c.pending = lru.New[string, *pendingAuthorization](maxPending, cfg.Now, nil)
	if cfg.DPoP != nil {
		d, err := newDPoPState(cfg.DPoP, cfg.Now)
		if err != nil {
			return nil, err
		}
		c.dpop = d
	}
	if cfg.Grant != nil {
		f, err := cfg.Grant.prepare(c)
		if err != nil {
			return nil, err
		}
		c.flow = f
	}
	return c, nil
}

// CloseIdleConnections closes the idle connections of the client's own
// requests (metadata, registration, token). Nothing else runs in the
// background; calling it is optional.
func (c *Client) CloseIdleConnections() { c.fetcher.Client().CloseIdleConnections() }

// OAuthHandler returns an SDK adapter for the MCP server at serverURL.
func (c *Client) OAuthHandler(serverURL string) (*OAuthHandler, error) {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	ops := lru.New[string, *attempts](maxTrackedOperations, c.cfg.Now, nil)
	return &OAuthHandler{c: c, resource: resource, ops: ops}, nil
}

// TokenSource returns an oauth2.TokenSource for the MCP server at
// serverURL, for code written against golang.org/x/oauth2. Token returns
// the stored token, refreshed when it expires, after a [Client.Login] when
// there is none (which may involve the user); ctx bounds those calls. The
// Client keeps the refresh token. Requests made with these tokens lack
// [Client.Transport]'s handling of 401 and 403 and of redirects, and a
// DPoP-bound token, which needs a proof per request, is refused
// ([ErrConfig]).
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
			return nil, fmt.Errorf("%w: no token after authorization", errAuthorizer)
		case ascii.EqualFold(tok.TokenType, dpop.TokenType):
			return nil, errDPoPTransport
		}
		return bearerToken(tok), nil
	})
}

// Transport returns a Transport for the MCP server at serverURL (its
// canonical URL is the resource the tokens are for). Requests to any other
// URL pass through base untouched, except that a request following a
// redirect to another origin (scheme, host, port; RFC 6454) leaves without
// Authorization, DPoP or Cookie headers, and a redirected request never
// carries a DPoP proof made for the previous URL. A nil base means a new
// http.Transport with the usual timeouts; note that base talks to the MCP
// server only, never to a URL chosen by another party.
func (c *Client) Transport(serverURL string, base http.RoundTripper) (*Transport, error) {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = defaultBaseTransport()
	}
	return &Transport{c: c, resource: resource, base: base}, nil
}

// Login authorizes the client for the MCP server at serverURL before any
// request is refused: discovery by the well-known URLs, scopes from the
// server's scopes_supported. It is a no-op when a usable token is stored.
func (c *Client) Login(ctx context.Context, serverURL string) error {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return err
	}
	if tok, err := c.currentToken(ctx, resource); err == nil && tok != nil {
		return nil
	}
	return c.unauthorized(ctx, resource, challenge{}, "", &attempts{})
}

// Logout ends the client's session with the MCP server at serverURL.
// When the authorization server's metadata names a revocation_endpoint,
// the stored tokens are revoked there first (RFC 7009: the refresh token,
// then the access token), each request bounded by Config.Timeout and
// sent with the client's token endpoint authentication; then the token is
// deleted from the store, whatever the revocation's outcome. The
// registration is kept: it is reused by the next login.
//
// An error wrapping ErrRevocation means the token is deleted locally but
// the server did not confirm its revocation (a warning to show the user);
// any other error means the token may still be stored.
func (c *Client) Logout(ctx context.Context, serverURL string) error {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return err
	}
	st, unlock, err := c.lockedState(ctx, resource)
	if err != nil {
		return err
	}
	defer unlock()
	if st == nil {
		return nil // never logged in
	}
	if l, ok := c.store.(tokenstore.Locker); ok {
		unlockStore, err := l.Lock(ctx, st.key)
		if err != nil {
			return err
		}
		defer unlockStore()
	}
	// Read again under the store's lock: a refresh in another process may
	// have rotated the refresh token. A token bound to a DPoP key this
	// client lacks is revoked and deleted too.
	tok, err := c.store.Token(ctx, st.key)
	if errors.Is(err, tokenstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	revoked := c.revokeTokens(ctx, st, tok)
	// The deletion happens even when ctx ended during the revocation.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
	defer cancel()
	if err := c.store.DeleteToken(dctx, st.key); err != nil {
		if revoked != nil {
			c.log.WarnContext(ctx, "token revocation failed", "issuer", st.key.Issuer, "error", revoked)
		}
		return err
	}
	if revoked != nil {
		c.log.WarnContext(ctx, "token deleted locally; revocation failed", "issuer", st.key.Issuer, "error", revoked)
		return revoked
	}
	c.log.InfoContext(ctx, "logged out", "resource", resource, "issuer", st.key.Issuer,
		"revoked", st.d.AuthServer.RevocationEndpoint != "")
	return nil
}
