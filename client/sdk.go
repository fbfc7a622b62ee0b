package client

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

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
// resend more than once per call, so the step-up limit (requirement CL-15)
// is counted per operation (the Mcp-Method and Mcp-Name headers of
// 2026-07-28, else method and path) over Config.StepUpWindow: an operation
// that already started MaxAuthorizationAttempts authorizations in the
// window gets ErrAttemptLimit instead of another one.
//
// It is safe for concurrent use.
type OAuthHandler struct {
	c        *Client
	resource string

	mu  sync.Mutex
	ops map[string]*opBudget
}

type opBudget struct {
	attempts
	first time.Time
}

var _ auth.OAuthHandler = (*OAuthHandler)(nil)

// OAuthHandler returns an SDK adapter for the MCP server at serverURL.
func (c *Client) OAuthHandler(serverURL string) (*OAuthHandler, error) {
	resource, err := c.canonicalResource(serverURL)
	if err != nil {
		return nil, err
	}
	return &OAuthHandler{c: c, resource: resource, ops: make(map[string]*opBudget)}, nil
}

// TokenSource implements auth.OAuthHandler. It returns nil (no
// Authorization header) when no token is stored yet: the server's 401
// then leads to Authorize.
func (h *OAuthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	tok, err := h.c.currentToken(ctx, h.resource)
	if err != nil || tok == nil {
		return nil, err
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok.AccessToken, TokenType: "Bearer", Expiry: tok.Expiry}), nil
}

// Authorize implements auth.OAuthHandler: it refreshes, authorizes or
// steps up for the refused request, and closes resp's body.
func (h *OAuthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	sent := ""
	if v := req.Header.Get("Authorization"); len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
		sent = v[7:]
	}
	return h.c.respond(ctx, h.resource, resp.StatusCode, resp.Header, sent, h.budget(req))
}

// budget returns the attempt counter of req's operation. Counters are
// only read and written under the Client's per-server login lock.
func (h *OAuthHandler) budget(req *http.Request) *attempts {
	key := req.Header.Get("Mcp-Method") + "\x00" + req.Header.Get("Mcp-Name")
	if req.Header.Get("Mcp-Method") == "" {
		key = req.Method + "\x00" + req.URL.Path
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.c.now()
	if b, ok := h.ops[key]; ok && now.Sub(b.first) <= h.c.cfg.StepUpWindow {
		return &b.attempts
	}
	if len(h.ops) >= maxTrackedOperations {
		for k, b := range h.ops {
			if now.Sub(b.first) > h.c.cfg.StepUpWindow || len(h.ops) >= maxTrackedOperations {
				delete(h.ops, k)
			}
		}
	}
	b := &opBudget{first: now}
	h.ops[key] = b
	return &b.attempts
}
