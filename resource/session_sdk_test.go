package resource_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// sessionProtocol is the protocol version with sessions (2026-07-28 has
// none), the one most deployed MCP servers speak.
const sessionProtocol = "2025-11-25"

// tokenTransport adds the current token of a host that refreshes or steps
// up, the way an MCP host's token source does.
type tokenTransport struct{ token atomic.Pointer[string] }

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*t.token.Load())
	return http.DefaultTransport.RoundTrip(r)
}

// whoami is what the tools answer: the identity of the request being
// served, "subject scopes [userID]".
func whoami(info *resource.TokenInfo, userID string) string {
	if info == nil {
		return "nobody"
	}
	return strings.TrimSpace(info.Subject + " " + strings.Join(info.Scopes, ",") + " " + userID)
}

// goSDKHandler is a go-sdk server whose tools read the current identity
// from req.Extra (the documented way in stateful mode).
func goSDKHandler(stateless bool) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	tool := func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		userID := ""
		if req.Extra.TokenInfo != nil {
			userID = req.Extra.TokenInfo.UserID
		}
		text := whoami(resource.TokenInfoFromSDK(req.Extra.TokenInfo), userID)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, tool)
	mcp.AddTool(server, &mcp.Tool{Name: "admin_tool"}, tool)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
}

// mcpGoHandler is a mark3labs/mcp-go server, whose tools get each
// request's context.
func mcpGoHandler(opts ...mcpgoserver.StreamableHTTPOption) http.Handler {
	s := mcpgoserver.NewMCPServer("files", "1.0.0", mcpgoserver.WithToolCapabilities(false))
	tool := func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(whoami(resource.TokenInfoFromContext(ctx), "")), nil
	}
	s.AddTool(mcpgo.NewTool("whoami"), tool)
	s.AddTool(mcpgo.NewTool("admin_tool"), tool)
	return mcpgoserver.NewStreamableHTTPServer(s, opts...)
}

// TestSessionHijackSDKs runs the session attacks against real MCP server
// libraries wrapped by the middleware: the go-sdk in stateful and
// stateless mode, and mcp-go by default and stateful. User B's valid token
// on user A's session is refused on POST, GET and DELETE, and A's session
// keeps working; A keeps the session with a refreshed token and after a
// step-up, and the tool sees A's current scopes.
func TestSessionHijackSDKs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		handler  http.Handler
		sessions bool
		userID   bool // the tool reports go-sdk's auth.TokenInfo.UserID
	}{
		{"go-sdk stateful", goSDKHandler(false), true, true},
		{"go-sdk stateless", goSDKHandler(true), false, true},
		{"mcp-go default", mcpGoHandler(), true, false},
		{"mcp-go stateful", mcpGoHandler(mcpgoserver.WithStateful(true)), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			srv := httptest.NewUnstartedServer(mux)
			url := "http://" + srv.Listener.Addr().String() + "/mcp"
			f := newFixture(t, func(c *resource.Config) {
				c.Resource, c.InsecureAllowHTTPLoopback = url, true
				c.Policy = &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"admin_tool": {"admin"}}}
			})
			f.v.Mount(mux, tt.handler)
			srv.Start()
			t.Cleanup(srv.Close)
			mint := func(sub, jti, scope string) string {
				return f.token(func(c *oauthtest.AccessToken) {
					c.Audience, c.Subject, c.ID, c.Scope = []string{url}, sub, jti, scope
				})
			}
			alice, bob := mint("alice", "a1", "mcp:tools"), mint("bob", "b1", "mcp:tools")
			suffix := ""
			if tt.userID {
				suffix = " " + testIssuer + "#alice"
			}

			host := &tokenTransport{}
			host.token.Store(&alice)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: url, HTTPClient: &http.Client{Transport: host, Timeout: 10 * time.Second},
				DisableStandaloneSSE: true, MaxRetries: -1,
			}, &mcp.ClientSessionOptions{ProtocolVersion: sessionProtocol})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			call := func(name string) (string, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil {
					return "", err
				}
				if res.IsError || len(res.Content) != 1 {
					return "", errorString("tool error")
				}
				return res.Content[0].(*mcp.TextContent).Text, nil
			}
			expect := func(step, tool, want string) {
				t.Helper()
				got, err := call(tool)
				if err != nil || got != want {
					t.Fatalf("%s: %s = %q, %v; want %q", step, tool, got, err, want)
				}
			}
			expect("alice", "whoami", "alice mcp:tools"+suffix)

			sid := cs.ID()
			if !tt.sessions {
				if sid != "" {
					t.Fatalf("stateless server issued session %q", sid)
				}
			} else {
				if sid == "" {
					t.Fatal("no session ID issued")
				}
				for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
					if code := hijack(t, url, method, bob, sid, "whoami"); code != http.StatusNotFound {
						t.Errorf("bob %s on alice's session: status %d, want 404", method, code)
					}
				}
				expect("alice after bob's attempts", "whoami", "alice mcp:tools"+suffix)
				// The owner's GET stream opens: its header is flushed through
				// the session-binding writer.
				if code := hijack(t, url, http.MethodGet, alice, sid, ""); code != http.StatusOK {
					t.Errorf("alice's GET stream: status %d", code)
				}
			}

			refreshed := mint("alice", "a2", "mcp:tools")
			host.token.Store(&refreshed)
			expect("alice with a refreshed token", "whoami", "alice mcp:tools"+suffix)

			// The go-sdk client ends its session on a 403, so the step-up
			// challenge is fetched by hand, as a host's step-up transport
			// does before it retries with the new token.
			if code := hijack(t, url, http.MethodPost, refreshed, sid, "admin_tool"); code != http.StatusForbidden {
				t.Fatalf("admin_tool without the admin scope: status %d, want 403", code)
			}
			steppedUp := mint("alice", "a3", "mcp:tools admin")
			host.token.Store(&steppedUp)
			expect("alice after step-up", "admin_tool", "alice mcp:tools,admin"+suffix)
			expect("alice after step-up", "whoami", "alice mcp:tools,admin"+suffix)
			if cs.ID() != sid {
				t.Errorf("session changed from %q to %q", sid, cs.ID())
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// hijack sends one request of method with token on session sid (none when
// ""), calling tool when it is a POST, as another user's client would, and
// returns the status.
func hijack(t *testing.T, url, method, token, sid, tool string) int {
	t.Helper()
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+token)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	req.Header.Set("MCP-Protocol-Version", sessionProtocol)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
