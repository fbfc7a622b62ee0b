package client

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is an authorization server, a protected MCP server and a client
// wired together on 127.0.0.1.
type env struct {
	t     *testing.T
	as    *oauthtest.AS
	rs    *oauthtest.Resource
	c     *Client
	clock *oauthtest.Clock
	store *tokenstore.Memory
	logs  *syncBuffer
}

// newEnv starts the servers and a client with FollowRedirects, loopback
// allowed, a fixed clock and a debug logger; mutate adjusts the config.
func newEnv(t *testing.T, asOpts oauthtest.ASOptions, rsOpts oauthtest.ResourceOptions, mutate func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clock: oauthtest.NewClock(oauthtest.Epoch()), store: tokenstore.NewMemory(), logs: &syncBuffer{}}
	e.as = oauthtest.NewAS(t, asOpts)
	e.rs = oauthtest.NewResource(t, rsOpts, e.as)
	cfg := Config{
		Authorizer:                &FollowRedirects{},
		Store:                     e.store,
		InsecureAllowHTTPLoopback: true,
		Logger:                    slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:                       e.clock.Now,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// login runs the 401 path for the resource, as a first request would.
func (e *env) login(ctx context.Context) error {
	resource, err := e.c.canonicalResource(e.rs.MCPURL())
	if err != nil {
		return err
	}
	// A transport of its own: httptest.Server.Close in parallel tests closes
	// http.DefaultTransport's connections, which broke this request.
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(e.rs.MCPURL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		return err
	}
	resp.Body.Close()
	return e.c.respond(ctx, resource, resp.StatusCode, resp.Header, "", &attempts{})
}

// session connects the official SDK client through the OAuthHandler.
func (e *env) session(ctx context.Context, protocol string) (*mcp.ClientSession, error) {
	h, err := e.c.OAuthHandler(e.rs.MCPURL())
	if err != nil {
		return nil, err
	}
	return sdkConnect(ctx, &mcp.StreamableClientTransport{Endpoint: e.rs.MCPURL(), OAuthHandler: h, MaxRetries: -1,
		HTTPClient: &http.Client{}}, protocol)
}

// transportSession connects the official SDK client through Transport.
func (e *env) transportSession(ctx context.Context, protocol string) (*mcp.ClientSession, error) {
	tr, err := e.c.Transport(e.rs.MCPURL(), nil)
	if err != nil {
		return nil, err
	}
	return sdkConnect(ctx, &mcp.StreamableClientTransport{Endpoint: e.rs.MCPURL(), HTTPClient: tr.HTTPClient(), MaxRetries: -1}, protocol)
}

func sdkConnect(ctx context.Context, t mcp.Transport, protocol string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).
		Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
}

func callTool(ctx context.Context, cs *mcp.ClientSession, name string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err == nil && res.IsError {
		return errors.New("tool error")
	}
	return err
}

// noLeak fails the test if any credential the authorization server saw
// appears in the logs or in the given error texts.
func (e *env) noLeak(errs ...error) {
	e.t.Helper()
	texts := []string{e.logs.String()}
	for _, err := range errs {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	for _, secret := range e.as.Secrets() {
		for _, text := range texts {
			if strings.Contains(text, secret) {
				e.t.Errorf("a credential leaked into %q", truncate(text, 200))
			}
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// countingAuthorizer counts calls and delegates to FollowRedirects.
type countingAuthorizer struct {
	n     atomic.Int32
	inner Authorizer
}

func (a *countingAuthorizer) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	a.n.Add(1)
	return a.inner.Authorize(ctx, req)
}

// mcpTransport is an SDK transport authorized by h.
func mcpTransport(endpoint string, h *OAuthHandler) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h, MaxRetries: -1, HTTPClient: &http.Client{}}
}
