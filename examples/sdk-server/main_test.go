package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
)

// TestSDKServer: a client with only notes:read can list notes; add_note
// makes the server answer 403 insufficient_scope and the client steps up
// once (RS-12, CL-15).
func TestSDKServer(t *testing.T) {
	t.Parallel()
	as := authservertest.NewServer(t, authserver.Config{Consent: authserver.ConsentAuto, Scopes: []string{"notes:read", "notes:write"}})
	srv := httptest.NewUnstartedServer(nil)
	resourceURL := "http://" + srv.Listener.Addr().String() + "/mcp"
	h, v, err := newHandler(resourceURL, as.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()

	var authorizations atomic.Int32
	follow := &client.FollowRedirects{}
	c, err := client.New(client.Config{InsecureAllowHTTPLoopback: true,
		Authorizer: client.AuthorizerFunc(func(ctx context.Context, r *client.AuthorizationRequest) (*url.URL, error) {
			authorizations.Add(1)
			return follow.Authorize(ctx, r)
		})})
	if err != nil {
		t.Fatal(err)
	}
	oh, _ := c.OAuthHandler(resourceURL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 20 * time.Second}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: resourceURL, OAuthHandler: oh, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read_notes", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("add_note: %v %+v", err, res)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "read_notes", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("read_notes: %v %+v", err, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hi" {
		t.Errorf("read_notes after add_note = %+v, want the note \"hi\" (the notes are shared by every request)", res.Content[0])
	}
	if n := authorizations.Load(); n != 2 {
		t.Errorf("%d authorizations, want 2 (login, then step-up for notes:write)", n)
	}
}
