package resource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// bearerTransport adds a bearer token to every request, the way an MCP host
// hands its token to the go-sdk client.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// sdkServer is a go-sdk Streamable HTTP server behind the middleware, on
// 127.0.0.1, whose resource identifier is its own URL.
type sdkServer struct {
	f        *fixture
	url      string
	upstream *httptest.Server
	hits     *atomic.Int64
	guardErr atomic.Value // error seen by the forwarding tool
	extraHdr atomic.Value // Authorization the tool saw in req.Extra.Header
}

type forwardArgs struct {
	Token string `json:"token"`
}

// newSDKServer starts the server; mutate, if given, changes the Verifier's
// configuration after the defaults.
func newSDKServer(t *testing.T, mutate ...func(*resource.Config)) *sdkServer {
	t.Helper()
	s := &sdkServer{hits: &atomic.Int64{}}
	s.upstream = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		s.hits.Add(1)
		t.Error("RS-19: the upstream received a request carrying the inbound token")
	}))
	t.Cleanup(s.upstream.Close)

	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	s.url = "http://" + srv.Listener.Addr().String() + "/mcp"
	s.f = newFixture(t, func(c *resource.Config) {
		c.Resource = s.url
		c.InsecureAllowHTTPLoopback = true
		c.Policy = &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"admin_tool": {"admin"}}}
		for _, m := range mutate {
			m(c)
		}
	})
	v := s.f.v

	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, &mcp.ServerOptions{
		// RS-22: tool lists depend on the caller, so they are private.
		SetCacheable: func(ctx context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		info := resource.TokenInfoFromContext(ctx)
		if info == nil {
			return nil, nil, errors.New("no identity")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: info.Subject}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "binding"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		info := resource.TokenInfoFromContext(ctx)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: info.Scheme + " " + info.JKT}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "admin_tool"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	// A naive tool that tries to call an upstream API with the caller's token.
	guarded := &http.Client{Transport: v.GuardTransport(nil), Timeout: 5 * time.Second}
	mcp.AddTool(server, &mcp.Tool{Name: "forward"}, func(ctx context.Context, req *mcp.CallToolRequest, in forwardArgs) (*mcp.CallToolResult, any, error) {
		s.extraHdr.Store(req.Extra.Header.Get("Authorization"))
		out, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.upstream.URL+"/api", nil)
		out.Header.Set("Authorization", "Bearer "+in.Token)
		resp, err := guarded.Do(out)
		if err == nil {
			resp.Body.Close()
			return nil, nil, errors.New("forwarded")
		}
		s.guardErr.Store(err)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}}, nil, nil
	})
	// RS-22: tools/list shows only the tools the caller's token may call.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				info := resource.TokenInfoFromContext(ctx)
				lt.Tools = slices.DeleteFunc(lt.Tools, func(tool *mcp.Tool) bool {
					return tool.Name == "admin_tool" && !v.Grants(info, "admin")
				})
			}
			return res, err
		}
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	v.Mount(mux, handler)
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

func (s *sdkServer) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             s.url,
		HTTPClient:           &http.Client{Transport: &bearerTransport{token: token, base: http.DefaultTransport}, Timeout: 10 * time.Second},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content = %+v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestGoSDK: a go-sdk client with a valid token calls a go-sdk server
// wrapped by the middleware; without a token it is refused (RS-20).
func TestGoSDK(t *testing.T) {
	t.Parallel()
	s := newSDKServer(t)
	cs, err := s.connect(t, s.f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{s.url} }))
	if err != nil {
		t.Fatalf("Connect with a valid token: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	if got := textOf(t, res); got != "user-1" {
		t.Errorf("tool saw subject %q", got)
	}

	if cs2, err := s.connect(t, ""); err == nil {
		_, err = cs2.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		cs2.Close()
		if err == nil {
			t.Fatal("RS-20: a client without a token was served")
		}
	}
	wrongAudience := s.f.token(nil) // audience is https://mcp.example.com/mcp, not this server
	if cs3, err := s.connect(t, wrongAudience); err == nil {
		_, err = cs3.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		cs3.Close()
		if err == nil {
			t.Fatal("RS-08: a token for another resource was served")
		}
	}
}

// TestGoSDKPassthroughGuard covers RS-19 end to end: the tool sees no
// Authorization header, and its attempt to forward the caller's token to an
// upstream API is refused before anything is sent.
func TestGoSDKPassthroughGuard(t *testing.T) {
	t.Parallel()
	s := newSDKServer(t)
	tok := s.f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{s.url} })
	cs, err := s.connect(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "forward", Arguments: map[string]any{"token": tok}})
	if err != nil || res.IsError || textOf(t, res) != "refused" {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	if got, _ := s.extraHdr.Load().(string); got != "" {
		t.Errorf("RS-19: the tool saw Authorization %q", got)
	}
	gerr, _ := s.guardErr.Load().(error)
	var pe *resource.PassthroughError
	if !errors.As(gerr, &pe) || !errors.Is(gerr, resource.ErrTokenPassthrough) || pe.Where != "header Authorization" {
		t.Errorf("guard error = %v", gerr)
	}
	if s.hits.Load() != 0 {
		t.Error("RS-19: the upstream was contacted")
	}
	var blocked bool
	for _, e := range s.f.events.all() {
		if e.Decision == resource.DecisionPassthroughBlocked {
			blocked = true
		}
	}
	if !blocked {
		t.Error("no passthrough_blocked audit event")
	}
}

// TestGoSDKToolScopesAndLists covers RS-12 and RS-22 through the SDK: a
// narrower token sees a subset of tools/list, marked private, and is
// stepped up for the tool it may not call.
func TestGoSDKToolScopesAndLists(t *testing.T) {
	t.Parallel()
	s := newSDKServer(t)
	names := func(token string) ([]string, string) {
		cs, err := s.connect(t, token)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		lt, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range lt.Tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out, lt.CacheScope
	}
	narrow := s.f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{s.url}; c.Scope = "mcp:tools" })
	wide := s.f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{s.url}; c.Scope = "mcp:tools admin" })
	gotNarrow, scope := names(narrow)
	gotWide, _ := names(wide)
	if slices.Contains(gotNarrow, "admin_tool") || !slices.Contains(gotWide, "admin_tool") || len(gotWide) != len(gotNarrow)+1 {
		t.Errorf("RS-22: narrow %v, wide %v", gotNarrow, gotWide)
	}
	if scope != "private" {
		t.Errorf("RS-22: cacheScope = %q", scope)
	}
	cs, err := s.connect(t, narrow)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "admin_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("RS-12: the narrow token called admin_tool")
	}
}

// TestTR03GetIsNotAStream covers TR-03 as it bears on authorization: GET
// without a token is challenged; with one, the SDK answers 405.
func TestTR03GetIsNotAStream(t *testing.T) {
	t.Parallel()
	s := newSDKServer(t)
	tok := s.f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{s.url} })
	for _, tt := range []struct {
		token  string
		status int
	}{{"", 401}, {tok, 405}} {
		req, _ := http.NewRequest(http.MethodGet, s.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET with token %v: %d, want %d", tt.token != "", resp.StatusCode, tt.status)
		}
	}
}
