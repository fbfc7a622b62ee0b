package resource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// connectSDKServer is a Go SDK server whose tool "list_repos" needs the
// user's GitHub token, behind the middleware; versions restricts the
// protocol versions it speaks.
func connectSDKServer(t *testing.T, versions ...string) (*connectEnv, string) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	url := "http://" + srv.Listener.Addr().String() + "/mcp"
	e := newConnectEnvAt(t, url)
	server := mcp.NewServer(&mcp.Implementation{Name: "repos", Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	mcp.AddTool(server, &mcp.Tool{Name: "list_repos"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Org string `json:"org"`
	}) (*mcp.CallToolResult, any, error) {
		gh, err := e.conn.ProviderToken(ctx, "github", sdkCall(req))
		if res, rpcErr, ok := sdkConnectAnswer(err); ok {
			return res, nil, rpcErr
		}
		if err != nil {
			return nil, nil, err
		}
		// The tool uses the token upstream; the client sees only its result.
		_ = gh.AccessToken
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "repos of " + in.Org}}}, nil, nil
	})
	e.f.v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	srv.Start()
	t.Cleanup(srv.Close)
	return e, url
}

// recordingTransport adds the bearer token and keeps every response body.
type recordingTransport struct {
	token string
	mu    sync.Mutex
	seen  strings.Builder
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body := new(strings.Builder)
	_, _ = ioCopy(body, resp)
	r.mu.Lock()
	r.seen.WriteString(body.String())
	r.mu.Unlock()
	resp.Body = newBody(body.String())
	return resp, nil
}

func TestConnectGoSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		versions []string
	}{
		{name: "2026-07-28 input required", versions: nil},
		{name: "2025-11-25 error -32042", versions: []string{"2025-11-25"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, url := connectSDKServer(t, tc.versions...)
			rt := &recordingTransport{token: e.tokens["alice"]}
			var mu sync.Mutex
			var asked []*mcp.ElicitParams
			client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params)
					mu.Unlock()
					e.conns.Connect("alice", "github") // the user completes the connect page
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
				HTTPClient: &http.Client{Transport: rt, Timeout: 10 * time.Second}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "list_repos", Arguments: map[string]any{"org": "acme"}}
			res, err := cs.CallTool(ctx, params)
			if tc.versions != nil {
				// The Go SDK client does not act on -32042 itself: the
				// host handles it (client.Client does) and retries.
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) || rpcErr.Code != resource.CodeURLElicitationRequired ||
					!strings.Contains(string(rpcErr.Data), `"elicitationId":"connect-github"`) {
					t.Fatalf("2025-11-25 call = %+v, %v; want -32042", res, err)
				}
				e.conns.Connect("alice", "github")
				res, err = cs.CallTool(ctx, params)
			}
			if err != nil || res.IsError || textOf(t, res) != "repos of acme" {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			if tc.versions == nil && (len(asked) != 1 || asked[0].Mode != "url" ||
				!strings.HasPrefix(asked[0].URL, e.as.URL+"/connect/github?ref=") || asked[0].ElicitationID != "") {
				t.Fatalf("elicitations = %+v", asked)
			}
			rt.mu.Lock()
			wire := rt.seen.String()
			rt.mu.Unlock()
			if strings.Contains(wire, oauthtest.ProviderToken("alice", "github")) || strings.Contains(wire, "provider-secret") {
				t.Fatal("the MCP client received the provider's token")
			}
		})
	}
}

func ioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(dst, resp.Body)
}

func newBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
