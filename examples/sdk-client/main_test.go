package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/resource"
)

// TestLoopbackFlow runs the example's client against an authorization
// server and a protected echo server, with a stand-in browser: an HTTP
// client that follows the authorization server's redirects to the
// client's loopback listener, as a real browser would (CL-21).
func TestLoopbackFlow(t *testing.T) {
	t.Parallel()
	as := authservertest.NewServer(t, authserver.Config{Consent: authserver.ConsentAuto, Scopes: []string{"mcp:tools"}})
	srv := httptest.NewUnstartedServer(nil)
	u := "http://" + srv.Listener.Addr().String() + "/mcp"
	v, err := resource.New(resource.Config{Resource: u, Issuers: []resource.Issuer{{Issuer: as.Issuer()}},
		ScopesSupported: []string{"mcp:tools"}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	mux := http.NewServeMux()
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil, nil
	})
	v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	browser := func(ctx context.Context, authURL string) error {
		go func() { // the browser lives its own life; the listener gets the redirect
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
			if err == nil {
				resp.Body.Close()
			} else if !errors.Is(err, context.Canceled) {
				t.Log("browser:", err)
			}
		}()
		return nil
	}
	var out bytes.Buffer
	cfg := client.Config{Authorizer: &client.Loopback{Open: browser, Timeout: 20 * time.Second}, InsecureAllowHTTPLoopback: true}
	if err := run(context.Background(), cfg, u, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "echo: hello") {
		t.Fatalf("output %q", out.String())
	}
}
