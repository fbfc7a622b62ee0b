package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestCL19BearerHeader: tokens travel in the Authorization header only,
// only to the server they were issued for, one per server.
func TestCL19BearerHeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	as := oauthtest.NewAS(t, oauthtest.ASOptions{})
	rs1 := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
	rs2 := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
	c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	for _, rs := range []*oauthtest.Resource{rs1, rs2} {
		tr, err := c.Transport(rs.MCPURL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sdkConnect(ctx, mcpTransportHC(rs.MCPURL(), tr.HTTPClient()), "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		if err := callTool(ctx, cs, "echo"); err != nil {
			t.Fatal(err)
		}
		cs.Close()
	}
	b1, b2 := nonEmpty(rs1.Bearers()), nonEmpty(rs2.Bearers())
	if len(b1) == 0 || len(b2) == 0 {
		t.Fatal("no bearer tokens seen")
	}
	for _, tok := range b1 {
		if tok != b1[0] {
			t.Error("server 1 saw several tokens")
		}
		for _, other := range b2 {
			if tok == other {
				t.Error("CL-19: one token was sent to two servers")
			}
		}
		if g, _ := as.Lookup(tok); g.Resource != rs1.MCPURL() {
			t.Errorf("CL-19: server 1 got a token for %q", g.Resource)
		}
	}
	for _, p := range append(rs1.Paths(), rs2.Paths()...) {
		if strings.Contains(p, "access_token") {
			t.Error("CL-19: a token in a URL")
		}
	}

	// Other URLs through the same transport get no token.
	var gotAuth []string
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer other.Close()
	tr, _ := c.Transport(rs1.MCPURL(), nil)
	seen := len(rs1.Bearers())
	for _, u := range []string{other.URL + "/mcp", rs1.URL + "/other", rs1.URL + "/mcp/"} {
		resp, err := tr.HTTPClient().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range gotAuth {
		if a != "" {
			t.Errorf("CL-19: token sent to another server: %q", a)
		}
	}
	for _, tok := range rs1.Bearers()[seen:] {
		if tok != "" {
			t.Errorf("CL-19: token sent to another path of the server")
		}
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// TestCL15StepUp: a 403 insufficient_scope re-authorizes with the union of
// the previously requested and the challenged scopes, without refreshing,
// and the request is resent.
func TestCL15StepUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, via := range []string{"transport", "sdk adapter"} {
		t.Run("CL-15 "+via, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true},
				oauthtest.ResourceOptions{ChallengeScope: []string{"mcp:basic"}, ScopesSupported: []string{"mcp:profile"},
					ToolScopes: map[string][]string{"write": {"mcp:write"}}}, nil)
			connect := e.transportSession
			if via == "sdk adapter" {
				connect = e.session
			}
			cs, err := connect(ctx, "2026-07-28")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := callTool(ctx, cs, "echo"); err != nil {
				t.Fatal(err)
			}
			if err := callTool(ctx, cs, "write"); err != nil {
				t.Fatalf("step-up failed: %v", err)
			}
			az := e.as.Authorizations()
			if len(az) != 2 {
				t.Fatalf("authorizations = %d, want 2", len(az))
			}
			if az[0].Get("scope") != "mcp:basic" || az[1].Get("scope") != "mcp:basic mcp:write" {
				t.Errorf("scopes %q then %q; want the challenge, then the union", az[0].Get("scope"), az[1].Get("scope"))
			}
			for _, tr := range e.as.TokenRequests() {
				if tr.Form.Get("grant_type") == "refresh_token" {
					t.Error("refreshed for a step-up: a refresh cannot widen scopes")
				}
			}
			if err := callTool(ctx, cs, "write"); err != nil || len(e.as.Authorizations()) != 2 {
				t.Errorf("the stepped-up token was not kept: %v", err)
			}
		})
	}
}

// TestCL15StepUpLimit: a 403 that never resolves stops after
// MaxAuthorizationAttempts authorizations; the caller gets the 403.
func TestCL15StepUpLimit(t *testing.T) {
	t.Parallel()
	// The server never grants the scope the resource demands.
	e := newEnv(t, oauthtest.ASOptions{DenyScopes: []string{"admin"}}, oauthtest.ResourceOptions{AlwaysForbid: true, ChallengeScope: []string{"read"}}, nil)
	tr, _ := e.c.Transport(e.rs.MCPURL(), nil)
	req, _ := http.NewRequest(http.MethodPost, e.rs.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	resp, err := tr.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status = %d, want the server's 403", resp.StatusCode)
	}
	if n := len(e.as.Authorizations()); n != MaxAuthorizationAttempts {
		t.Errorf("CL-15: %d authorizations, want %d", n, MaxAuthorizationAttempts)
	}
	if n := len(nonEmpty(e.rs.Bearers())); n != MaxAuthorizationAttempts {
		t.Errorf("%d authorized sends, want %d", n, MaxAuthorizationAttempts)
	}
	e.noLeak()
}

// TestCL15FutileStepUp: when the refused token already carries every
// challenged scope, no new authorization is started.
func TestCL15FutileStepUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{AlwaysForbid: true, ChallengeScope: []string{"admin"}}, nil)
	tr, _ := e.c.Transport(e.rs.MCPURL(), nil)
	req, _ := http.NewRequest(http.MethodPost, e.rs.MCPURL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	resp, err := tr.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(e.as.Authorizations()) != 1 {
		t.Errorf("status %d after %d authorizations; want 403 after 1", resp.StatusCode, len(e.as.Authorizations()))
	}
}

// TestTransportRequestHandling: bodies are replayed after an
// authorization, the caller's request is not modified, and a server error
// is passed through.
func TestTransportRequestHandling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
	tr, _ := e.c.Transport(e.rs.MCPURL(), nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, _ := http.NewRequest(http.MethodPost, e.rs.MCPURL(), io.NopCloser(strings.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"tools"`) {
		t.Errorf("replayed request: %d %s", resp.StatusCode, got)
	}
	if req.Header.Get("Authorization") != "" {
		t.Error("the caller's request was modified")
	}
	if b := e.rs.Bearers(); len(b) != 2 || b[0] != "" || b[1] == "" {
		t.Errorf("sends %q: want one without and one with a token", b)
	}

	// Authorization failure surfaces as an error, with nothing sent.
	e.as.Update(func(o *oauthtest.ASOptions) { o.OmitCodeChallenge = true })
	_ = e.c.Logout(context.Background(), e.rs.MCPURL())
	e.store.PutDiscovery(context.Background(), mustDiscovery(t, e, true))
	req2, _ := http.NewRequest(http.MethodPost, e.rs.MCPURL(), strings.NewReader(body))
	if _, err := tr.RoundTrip(req2); !errors.Is(err, errPKCEUnsupported) {
		t.Errorf("err = %v, want errPKCEUnsupported", err)
	}
}

// mustDiscovery returns the stored discovery state, expired when stale.
func mustDiscovery(t *testing.T, e *env, stale bool) *tokenstore.Discovery {
	t.Helper()
	d, err := e.store.Discovery(context.Background(), e.rs.MCPURL())
	if err != nil {
		t.Fatal(err)
	}
	if stale {
		d.Expires = d.FetchedAt
	}
	return d
}

func mcpTransportHC(endpoint string, hc *http.Client) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}
}
