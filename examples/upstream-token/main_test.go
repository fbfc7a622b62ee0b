package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// bearer adds the MCP access token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestUpstreamToken: the tool exchanges the caller's MCP token at a fake
// authorization server on 127.0.0.1 and calls a fake GitHub API with the
// result; the API never sees the MCP token; a refused exchange (revoked
// grant) is a tool error asking to log in again.
func TestUpstreamToken(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	var refuse atomic.Bool
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() || r.URL.Path != "/token" || id != "mcp-server" || secret != "s3cret" || r.PostForm.Get("audience") != "github" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		_, _ = io.WriteString(w, `{"access_token":"gho_user_token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer as.Close()
	var apiSaw atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiSaw.Store(r.Header.Get("Authorization"))
		if r.URL.Path != "/user" || r.Header.Get("Authorization") != "Bearer gho_user_token" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"login":"octocat","id":583231}`)
	}))
	defer api.Close()
	srv := httptest.NewUnstartedServer(nil)
	resourceURL := "http://" + srv.Listener.Addr().String() + "/mcp"
	h, closeAll, err := newHandler(config{
		Resource: resourceURL, TokenURL: as.URL + "/token", ClientID: "mcp-server", ClientSecret: "s3cret",
		Issuer:   resource.Issuer{Issuer: as.URL, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}},
		Audience: "github", API: api.URL, InsecureHTTP: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()

	now := time.Now()
	token := key.Mint(t, oauthtest.AccessToken{Issuer: as.URL, Subject: "u-octocat", Audience: []string{resourceURL},
		ClientID: "cli", Scope: "mcp:read", IssuedAt: now, Expiry: now.Add(time.Hour)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: resourceURL, HTTPClient: &http.Client{Transport: bearer{token}, Timeout: 20 * time.Second}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	call := func() (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "github_user"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if text, isErr := call(); isErr || text != "octocat (id 583231)" {
		t.Fatalf("github_user: %q (error %v)", text, isErr)
	}
	if saw, _ := apiSaw.Load().(string); strings.Contains(saw, token) {
		t.Error("the MCP token reached the API")
	}

	// A revoked grant: the exchanger caches for a minute, so a new token.
	refuse.Store(true)
	token2 := key.Mint(t, oauthtest.AccessToken{Issuer: as.URL, Subject: "u-octocat", Audience: []string{resourceURL},
		ClientID: "cli", Scope: "mcp:read", IssuedAt: now, Expiry: now.Add(time.Hour), ID: "second"})
	session2, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: resourceURL, HTTPClient: &http.Client{Transport: bearer{token2}, Timeout: 20 * time.Second}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session2.Close()
	res, err := session2.CallTool(ctx, &mcp.CallToolParams{Name: "github_user"})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "(401): log in again") {
		t.Fatalf("after revocation: %+v %v", res, err)
	}
}
