package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// registerScoped registers a public client at the demo's authorization
// server through Dynamic Client Registration with scope, as MCP hosts do
// with the scope of the first challenge, and returns the client_id and the
// scope the server reports.
func registerScoped(t *testing.T, issuer, redirectURI, scope string) (string, string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	md, err := oauthmeta.ParseAuthServerMetadata(body)
	if err != nil || md.RegistrationEndpoint == "" {
		t.Fatalf("metadata: %v %s", err, body)
	}
	reg, _ := json.Marshal(oauthmeta.ClientMetadata{
		RedirectURIs: []string{redirectURI}, TokenEndpointAuthMethod: oauthmeta.AuthMethodNone,
		GrantTypes: []string{oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken}, Scope: scope,
	})
	resp, err = hc.Post(md.RegistrationEndpoint, "application/json", bytes.NewReader(reg))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	info, err := oauthmeta.ParseClientInformation(body)
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("registration: %d %v %s", resp.StatusCode, err, body)
	}
	return info.ClientID, info.Scope
}

// countingAuthorizer counts the authorizations the client runs.
type countingAuthorizer struct {
	client.FollowRedirects
	n atomic.Int32
}

func (a *countingAuthorizer) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	a.n.Add(1)
	return a.FollowRedirects.Authorize(ctx, req)
}

// whoamiResult is the demo's whoami answer.
type whoamiResult struct {
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
}

// TestStepUpAfterScopedRegistration: a client registered through DCR
// with the narrow scope mcp:tools (as the TypeScript and Python SDKs and
// mcp-remote do) is answered 403 insufficient_scope "mcp:tools mcp:admin"
// by the demo's MCP server and steps up with the same registration:
// mcpauth's client library under the official Go SDK, against the servers
// of `mcpauth demo --no-client`. (TestE2EInteropTypeScriptSDK does the same
// with the TypeScript SDK's own registration and step-up.)
func TestStepUpAfterScopedRegistration(t *testing.T) {
	t.Parallel()
	issuer, mcpURL := startDemo(t)
	clientID, scope := registerScoped(t, issuer, client.DefaultRedirectURI, "mcp:tools")
	if scope != "mcp:tools" {
		t.Fatalf("registration response scope %q, want the registered mcp:tools", scope)
	}
	authz := &countingAuthorizer{}
	c, err := client.New(client.Config{
		Authorizer: authz, InsecureAllowHTTPLoopback: true, DisableDynamicRegistration: true,
		PreRegistered: []client.PreRegisteredClient{{Issuer: issuer, ClientID: clientID, TokenEndpointAuthMethod: oauthmeta.AuthMethodNone}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h, HTTPClient: &http.Client{Timeout: 30 * time.Second}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	callText := func(name string, args map[string]any) string {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %+v", name, res.Content)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if got := callText("echo", map[string]any{"message": "hello"}); got != "hello" {
		t.Fatalf("echo: %q", got)
	}
	if n := authz.n.Load(); n != 1 {
		t.Fatalf("%d authorizations before the step-up, want 1", n)
	}
	if got := callText("admin_echo", map[string]any{"message": "step up"}); got != "STEP UP" {
		t.Fatalf("admin_echo: %q", got)
	}
	if n := authz.n.Load(); n != 2 {
		t.Fatalf("%d authorizations, want 2 (the second the step-up)", n)
	}
	var who whoamiResult
	if err := json.Unmarshal([]byte(callText("whoami", nil)), &who); err != nil {
		t.Fatal(err)
	}
	if who.ClientID != clientID || !slices.Contains(who.Scopes, "mcp:admin") || !slices.Contains(who.Scopes, "mcp:tools") {
		t.Fatalf("whoami %+v: want client %s with mcp:tools and mcp:admin", who, clientID)
	}
}
