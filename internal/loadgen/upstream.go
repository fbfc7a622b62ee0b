package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream is a go-sdk MCP server (stateless Streamable HTTP, one tool
// "whoami" answering the X-Forwarded-User the proxy set) with no
// authorization of its own, listening on 127.0.0.1: the server an mcpauth
// protect proxy fronts. It counts what reached it and what should not
// have. Close releases it; its methods are safe for concurrent use.
type Upstream struct {
	// URL is the MCP endpoint.
	URL string
	// Served counts requests that reached the MCP handler.
	Served atomic.Int64
	// Leaked counts requests that reached it with an Authorization header
	// (a forwarded credential, RS-19) or without the X-Forwarded-User the
	// proxy sets from a validated token (an unauthenticated request let
	// through).
	Leaked atomic.Int64

	srv *httptest.Server
}

// NewUpstream starts the upstream on 127.0.0.1.
func NewUpstream() *Upstream {
	u := &Upstream{}
	h := whoamiHandler("load-upstream", func(_ context.Context, req *mcp.CallToolRequest) (string, error) {
		if req.Extra == nil {
			return "", nil
		}
		return req.Extra.Header.Get("X-Forwarded-User"), nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.Served.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Forwarded-User") == "" {
			u.Leaked.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	u.srv = httptest.NewServer(mux)
	u.URL = u.srv.URL + "/mcp"
	return u
}

// whoamiHandler is the go-sdk MCP server of the targets, stateless
// Streamable HTTP with JSON answers, whose one tool "whoami" answers what
// who says.
func whoamiHandler(name string, who func(context.Context, *mcp.CallToolRequest) (string, error)) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		text, err := who(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// Close stops the listener.
func (u *Upstream) Close() { u.srv.Close() }
