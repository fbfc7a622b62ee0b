//go:build e2e

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// plainIssuer is an authorization server on plain http (127.0.0.1) that
// publishes RFC 8414 metadata and a JWK Set, and whose tokens the test
// mints itself, for any subject and scope.
type plainIssuer struct {
	*oauthtest.JWKSServer
	key *oauthtest.Key
}

func newPlainIssuer(t *testing.T) *plainIssuer {
	t.Helper()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	return &plainIssuer{JWKSServer: oauthtest.NewPlainJWKSServer(t, key), key: key}
}

func (is *plainIssuer) token(t *testing.T, audience, subject, jti, scope string) string {
	now := time.Now()
	return is.key.Mint(t, oauthtest.AccessToken{Issuer: is.Issuer, Subject: subject, Audience: []string{audience},
		ClientID: "host", Scope: scope, ID: jti, IssuedAt: now.Add(-time.Minute), Expiry: now.Add(time.Hour)})
}

// statefulUpstream is a go-sdk server with sessions (the default mode) and
// no auth of its own; its tools report the identity headers protect sets
// on the request they serve.
func statefulUpstream(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	tool := func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		h := req.Extra.Header
		return textResult(fmt.Sprintf("user=%s scopes=%s", h.Get(headerUser), h.Get(headerScopes))), nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, tool)
	mcp.AddTool(s, &mcp.Tool{Name: "admin_tool"}, tool)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// swapTransport sends the host's current token.
type swapTransport struct{ token atomic.Pointer[string] }

func (s *swapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*s.token.Load())
	return http.DefaultTransport.RoundTrip(r)
}

// rawCall sends one request with token on session sid and returns the
// status and body; POST calls tool.
func rawCall(t *testing.T, url, method, token, sid, tool string) (int, string) {
	t.Helper()
	var body io.Reader = http.NoBody
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
	}
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == 200 {
		return resp.StatusCode, "" // an event stream: do not wait for it
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

// TestE2EProtectSessions: a stateful go-sdk server behind `protect`. User
// B's valid token on user A's session is refused (404) on POST, GET and
// DELETE and A's session keeps working; A keeps the session with a
// refreshed token and after a step-up, and the tool sees the stepped-up
// scopes; a second protect process with the same --session-key (and
// --resource) accepts A's session for A only, one with its own random key
// does not.
func TestE2EProtectSessions(t *testing.T) {
	t.Parallel()
	is := newPlainIssuer(t)
	upstream := statefulUpstream(t)
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"default":["mcp:tools"],"tools":{"admin_tool":["admin"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"MCPAUTH_E2E_SESSION_KEY=" + strings.Repeat("0123456789abcdef", 3)}
	args := []string{"protect", "--addr", "127.0.0.1:0", "--upstream", upstream, "--issuer", is.Issuer, "--insecure-http", "--policy", policy}
	first := startProcEnv(t, env, append(args, "--session-key", "env:MCPAUTH_E2E_SESSION_KEY")...)
	url := firstURL.FindStringSubmatch(first.ready)[1] + "/mcp"
	second := startProcEnv(t, env, append(args, "--session-key", "env:MCPAUTH_E2E_SESSION_KEY", "--resource", url)...)
	url2 := firstURL.FindStringSubmatch(second.ready)[1] + "/mcp"
	unkeyed := startProc(t, append(args, "--resource", url)...)
	url3 := firstURL.FindStringSubmatch(unkeyed.ready)[1] + "/mcp"

	alice := is.token(t, url, "alice", "a1", "mcp:tools")
	bob := is.token(t, url, "bob", "b1", "mcp:tools")
	host := &swapTransport{}
	host.token.Store(&alice)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: host, Timeout: 10 * time.Second},
		DisableStandaloneSSE: true, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v; protect: %s", err, first.stderr.String())
	}
	defer cs.Close()
	expect := func(step, tool, want string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want {
			t.Fatalf("%s: %s = %+v, %v; want %q", step, tool, res, err, want)
		}
	}
	expect("alice", "whoami", "user=alice scopes=mcp:tools")
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no session ID")
	}

	for _, u := range []string{url, url2} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			if code, body := rawCall(t, u, method, bob, sid, "whoami"); code != http.StatusNotFound {
				t.Errorf("bob %s on alice's session via %s: %d %s, want 404", method, u, code, body)
			}
		}
	}
	expect("alice after bob's attempts", "whoami", "user=alice scopes=mcp:tools")

	refreshed := is.token(t, url, "alice", "a2", "mcp:tools")
	host.token.Store(&refreshed)
	expect("alice with a refreshed token", "whoami", "user=alice scopes=mcp:tools")

	if code, body := rawCall(t, url, http.MethodPost, refreshed, sid, "admin_tool"); code != http.StatusForbidden {
		t.Fatalf("admin_tool without admin: %d %s, want 403", code, body)
	}
	steppedUp := is.token(t, url, "alice", "a3", "mcp:tools admin")
	host.token.Store(&steppedUp)
	expect("alice after step-up", "admin_tool", "user=alice scopes=mcp:tools admin")
	expect("alice after step-up", "whoami", "user=alice scopes=mcp:tools admin")
	if cs.ID() != sid {
		t.Errorf("session changed from %q to %q", sid, cs.ID())
	}

	if code, body := rawCall(t, url2, http.MethodPost, steppedUp, sid, "whoami"); code != 200 || !strings.Contains(body, "user=alice scopes=mcp:tools admin") {
		t.Errorf("alice's session via the second protect: %d %s", code, body)
	}
	if code, body := rawCall(t, url3, http.MethodPost, steppedUp, sid, "whoami"); code != http.StatusNotFound {
		t.Errorf("alice's session via a protect with its own key: %d %s, want 404", code, body)
	}
	for _, p := range []*proc{first, second} {
		if !strings.Contains(p.stderr.String(), "session ID not issued to this user") {
			t.Errorf("no audit record of the refused session in %s", p.stderr.String())
		}
		if strings.Contains(p.stderr.String(), alice) || strings.Contains(p.stderr.String(), bob) {
			t.Error("a token in protect's log")
		}
	}
}
