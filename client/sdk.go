package client

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// maxTrackedOperations bounds the per-operation attempt counters of an
// OAuthHandler.
const maxTrackedOperations = 256

// OAuthHandler adapts a [Client] to the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk/auth.OAuthHandler), so that
// mcp.StreamableClientTransport authorizes its requests:
//
//	h, err := c.OAuthHandler(serverURL)
//	transport := &mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: h}
//
// TokenSource hands the SDK the stored token (refreshed when expired, no
// user interaction). Authorize handles the 401 or 403 the SDK got, as
// [Transport] does; the SDK then resends the request once. The SDK cannot
// resend more than once per call, so the step-up limit
// is counted per operation (the Mcp-Method and Mcp-Name headers of
// 2026-07-28, else method and path) over Config.StepUpWindow: an operation
// that already started MaxAuthorizationAttempts authorizations in the
// window gets [ErrForbidden] instead of another one.
//
// It is safe for concurrent use.
type OAuthHandler struct {
	c        *Client
	resource string

	ops     *lru.Cache[string, *attempts] // each kept for StepUpWindow from its first use
	wrapped atomic.Bool                   // HTTPClient was called: DPoP tokens may be handed out
}

var _ auth.OAuthHandler = (*OAuthHandler)(nil)

// TokenSource implements auth.OAuthHandler. It returns nil (no
// Authorization header) when no token is stored yet: the server's 401
// then leads to Authorize.
//
// The SDK always writes "Authorization: Bearer <token>". A DPoP-bound
// token (Config.DPoP) needs the handler's transport underneath the SDK,
// which switches the scheme and adds the proof: set
// StreamableClientTransport.HTTPClient to [OAuthHandler.HTTPClient]. Without
// it TokenSource refuses a DPoP-bound token ([ErrConfig]) rather than
// let it go out as a Bearer token.
func (h *OAuthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	tok, err := h.c.currentToken(ctx, h.resource)
	if err != nil || tok == nil {
		return nil, err
	}
	if ascii.EqualFold(tok.TokenType, dpop.TokenType) && !h.wrapped.Load() {
		return nil, errDPoPTransport
	}
	return oauth2.StaticTokenSource(bearerToken(tok)), nil
}

// HTTPClient returns the *http.Client to give the SDK's
// StreamableClientTransport.HTTPClient (base nil means a new http.Transport
// with the usual timeouts): requests to the MCP server that carry a
// DPoP-bound token leave with the DPoP scheme and a fresh proof (RFC 9449
// §7.1), and a resource server's use_dpop_nonce challenge is answered by
// one resend with its nonce (§9). Bearer tokens and other URLs pass through
// untouched. A redirect to another origin (scheme, host, port; RFC 6454) is
// followed without the Authorization, DPoP and Cookie headers the SDK or
// the caller set; Go's default policy keeps them when only the port or the
// scheme changes. Without this client the SDK uses http.DefaultClient and
// that default policy. It has no overall timeout; bound requests with
// contexts.
func (h *OAuthHandler) HTTPClient(base http.RoundTripper) *http.Client {
	if base == nil {
		base = defaultBaseTransport()
	}
	h.wrapped.Store(true)
	return &http.Client{Transport: &sdkTransport{h: h, base: base}}
}

// sdkTransport is the transport of [OAuthHandler.HTTPClient].
type sdkTransport struct {
	h    *OAuthHandler
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *sdkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = safehttp.OnRedirect(req)
	c := t.h.c
	sent := presentedToken(req.Header.Get("Authorization"))
	if c.dpop == nil || !(&Transport{c: c, resource: t.h.resource}).forResource(req) {
		return t.base.RoundTrip(req)
	}
	var tok *tokenstore.Token
	if sent != "" {
		var err error
		if tok, err = c.currentToken(req.Context(), t.h.resource); err != nil {
			return nil, err
		}
	}
	if tok == nil || tok.AccessToken != sent || !ascii.EqualFold(tok.TokenType, dpop.TokenType) {
		resp, err := t.base.RoundTrip(req)
		if err == nil {
			c.dpop.remember(req.URL, resp.Header) // a nonce of the first 401 serves the first proof
		}
		return resp, err
	}
	replay, err := replayable(req)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		out := req.Clone(req.Context())
		if replay != nil {
			out.Body, _ = replay()
		}
		if err := c.setAuthorization(out, tok); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(out)
		canResend := replay != nil || req.Body == nil || req.Body == http.NoBody
		if err != nil || !c.dpopNonceChallenge(out, resp) || i > 0 || !canResend {
			return resp, err
		}
		drain(resp)
	}
}

// Authorize implements auth.OAuthHandler: it refreshes, authorizes or
// steps up for the refused request, and closes resp's body.
func (h *OAuthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	sent := presentedToken(req.Header.Get("Authorization"))
	return h.c.respond(ctx, h.resource, resp.StatusCode, resp.Header, sent, h.budget(req))
}

// budget returns the attempt counter of req's operation. Counters are
// only read and written under the Client's per-server login lock.
func (h *OAuthHandler) budget(req *http.Request) *attempts {
	key := req.Header.Get("Mcp-Method") + "\x00" + req.Header.Get("Mcp-Name")
	if req.Header.Get("Mcp-Method") == "" {
		key = req.Method + "\x00" + req.URL.Path
	}
	expires := h.c.clock.Now().Add(h.c.cfg.StepUpWindow)
	return h.ops.GetOrAdd(key, func() *attempts { return new(attempts) }, expires)
}
