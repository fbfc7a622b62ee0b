package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
)

// elicitationClient is a Client whose store knows that the server at
// serverURL uses the authorization server issuer; asked records what
// OnURLElicitation saw and answer answers it.
func elicitationClient(t *testing.T, serverURL, issuer string, answer func(client.URLElicitation) (bool, error)) (*client.Client, *[]client.URLElicitation) {
	t.Helper()
	store := tokenstore.NewMemory()
	if issuer != "" {
		if err := store.PutDiscovery(context.Background(), &tokenstore.Discovery{Resource: serverURL, Issuer: issuer,
			Expires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	asked := &[]client.URLElicitation{}
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}, Store: store, InsecureAllowHTTPLoopback: true,
		OnURLElicitation: func(_ context.Context, e client.URLElicitation) (bool, error) {
			mu.Lock()
			*asked = append(*asked, e)
			mu.Unlock()
			return answer(e)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return c, asked
}

func TestElicitationHandler(t *testing.T) {
	t.Parallel()
	const server = "https://mcp.example.com/mcp"
	cases := []struct {
		name     string
		params   *mcp.ElicitParams
		answer   bool
		action   string
		asked    bool
		host     string
		warnings []string // substrings, in order
		message  string
	}{
		{name: "at the authorization server", params: &mcp.ElicitParams{Mode: "url", Message: "Connect GitHub", URL: "https://as.example.com/connect/github?ref=x"},
			answer: true, action: "accept", asked: true, host: "as.example.com", message: "Connect GitHub"},
		{name: "declined by the user", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://as.example.com/connect/github?ref=x"},
			answer: false, action: "decline", asked: true, host: "as.example.com"},
		{name: "other host", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://as.example.com.evil.example/connect"},
			answer: true, action: "accept", asked: true, host: "as.example.com.evil.example", warnings: []string{"not at the server's authorization server (as.example.com)"}},
		{name: "punycode", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://xn--xample-hva.com/connect"},
			answer: true, action: "accept", asked: true, host: "xn--xample-hva.com", warnings: []string{"Punycode", "not at the server's authorization server"}},
		{name: "terminal escapes in the message", params: &mcp.ElicitParams{Mode: "url", Message: "ok\x1b[2J\x1b]8;;https://evil/\x07hidden\u202e", URL: "https://as.example.com/c?r=1"},
			answer: true, action: "accept", asked: true, host: "as.example.com", message: "ok [2J ]8;;https://evil/ hidden "},
		{name: "plain http elsewhere", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "http://as.example.com/connect"}, action: "decline"},
		{name: "javascript", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "javascript:alert(1)"}, action: "decline"},
		{name: "user info", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://as.example.com@evil.example/"}, action: "decline"},
		{name: "space", params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://as.example.com/a b"}, action: "decline"},
		{name: "form mode", params: &mcp.ElicitParams{Mode: "form", Message: "password?"}, action: "decline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, asked := elicitationClient(t, server, "https://as.example.com", func(client.URLElicitation) (bool, error) { return tc.answer, nil })
			h, err := c.ElicitationHandler(server)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h(context.Background(), &mcp.ElicitRequest{Params: tc.params})
			if err != nil || res.Action != tc.action || res.Content != nil {
				t.Fatalf("handler = %+v, %v; want %s", res, err, tc.action)
			}
			if (len(*asked) == 1) != tc.asked {
				t.Fatalf("asked %d times, want asked=%v", len(*asked), tc.asked)
			}
			if !tc.asked {
				return
			}
			e := (*asked)[0]
			if e.URL != tc.params.URL || e.Host != tc.host || e.Server != server || (tc.message != "" && e.Message != tc.message) {
				t.Fatalf("asked %+v", e)
			}
			if len(e.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %q", e.Warnings, tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(e.Warnings[i], w) {
					t.Fatalf("warning %d = %q, want %q", i, e.Warnings[i], w)
				}
			}
		})
	}
}

func TestElicitationHandlerWithoutCallback(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Config{Authorizer: &client.FollowRedirects{}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := c.ElicitationHandler("https://mcp.example.com/mcp")
	res, err := h(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "url", Message: "m", URL: "https://as.example.com/c"}})
	if err != nil || res.Action != "decline" {
		t.Fatalf("without OnURLElicitation: %+v, %v", res, err)
	}
	if _, err := c.ElicitationHandler("not a url"); err == nil {
		t.Fatal("ElicitationHandler accepted a bad server URL")
	}
	if _, err := c.ElicitationMiddleware("not a url"); err == nil {
		t.Fatal("ElicitationMiddleware accepted a bad server URL")
	}
}

// legacyServer is a 2025-11-25 Go SDK server whose tool answers -32042
// (with data) until connected is set.
func legacyServer(t *testing.T, data string, connected *atomic.Bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	mcp.AddTool(server, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		if !connected.Load() {
			return nil, nil, &jsonrpc.Error{Code: -32042, Message: "URL elicitation required", Data: []byte(data)}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func TestElicitationMiddleware(t *testing.T) {
	t.Parallel()
	const good = `{"elicitations":[{"mode":"url","elicitationId":"connect-github","message":"Connect GitHub","url":"https://as.example.com/connect/github?ref=1"}]}`
	cases := []struct {
		name    string
		data    string
		connect bool // the user connects when asked
		accept  bool
		wantErr bool
		asked   int
	}{
		{name: "connect then retry", data: good, connect: true, accept: true, asked: 1},
		{name: "declined", data: good, accept: false, wantErr: true, asked: 1},
		{name: "never connected: bounded retries", data: good, accept: true, wantErr: true, asked: 3},
		{name: "form mode in the error", data: `{"elicitations":[{"mode":"form","message":"m"}]}`, accept: true, wantErr: true},
		{name: "no elicitations", data: `{"elicitations":[]}`, accept: true, wantErr: true},
		{name: "unsafe url", data: `{"elicitations":[{"mode":"url","elicitationId":"x","message":"m","url":"file:///etc/passwd"}]}`, connect: true, accept: true, wantErr: true},
		{name: "too many", data: `{"elicitations":[` + strings.Repeat(`{"mode":"url","message":"m","url":"https://a.example/"},`, 4) + `{"mode":"url","message":"m","url":"https://a.example/"}]}`, accept: true, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var connected atomic.Bool
			url := legacyServer(t, tc.data, &connected)
			c, asked := elicitationClient(t, url, "https://as.example.com", func(e client.URLElicitation) (bool, error) {
				if tc.connect {
					connected.Store(true)
				}
				return tc.accept, nil
			})
			mw, err := c.ElicitationMiddleware(url)
			if err != nil {
				t.Fatal(err)
			}
			sdk := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
			sdk.AddSendingMiddleware(mw)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := sdk.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}})
			var rpcErr *jsonrpc.Error
			if tc.wantErr != (err != nil) || (err != nil && (!errors.As(err, &rpcErr) || rpcErr.Code != -32042)) {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			if len(*asked) != tc.asked {
				t.Fatalf("asked %d times, want %d", len(*asked), tc.asked)
			}
			if tc.asked > 0 && (*asked)[0].ID != "connect-github" {
				t.Fatalf("asked %+v", (*asked)[0])
			}
		})
	}
}

func TestURLElicitations(t *testing.T) {
	t.Parallel()
	const server = "https://mcp.example.com/mcp"
	c, asked := elicitationClient(t, server, "https://as.example.com", func(client.URLElicitation) (bool, error) { return true, nil })
	data := []byte(`{"elicitations":[{"mode":"url","elicitationId":"a","message":"Connect\u001b[31m","url":"https://as.example.com/connect/a?ref=1"},` +
		`{"mode":"url","elicitationId":"b","message":"m","url":"javascript:alert(1)"},` +
		`{"mode":"url","elicitationId":"c","message":"m","url":"https://xn--e1afmkfd.example/c"}]}`)
	got := c.URLElicitations(context.Background(), server, data)
	if len(got) != 2 || got[0].ID != "a" || got[0].Host != "as.example.com" || got[0].Message != "Connect [31m" || len(got[0].Warnings) != 0 ||
		got[1].ID != "c" || len(got[1].Warnings) != 2 {
		t.Fatalf("URLElicitations = %+v", got)
	}
	if len(*asked) != 0 {
		t.Fatal("URLElicitations asked the user")
	}
	for _, bad := range []string{``, `{}`, `{"elicitations":[{"mode":"form","message":"m"}]}`, `[1]`} {
		if got := c.URLElicitations(context.Background(), server, []byte(bad)); got != nil {
			t.Errorf("%s: %+v", bad, got)
		}
	}
}
