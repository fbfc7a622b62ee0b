package attack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	mcpHost     = "mcp.example.com"
	mcpResource = "https://mcp.example.com/mcp"
)

// rsEnv is an honest MCP server (go-sdk, stateless) behind resource's
// middleware on vnet host mcp.example.com, trusting the issuer
// as.example.com, whose keys it fetches through RemoteKeys with the vnet
// resolver. Tools: "whoami" (needs mcp:tools), "admin_tool" (needs admin,
// counts its runs) and "forward" (a naive tool that tries to hand the
// caller's token to api.example.com through GuardTransport).
type rsEnv struct {
	t          *testing.T
	net        *vnet
	iss        *keyIssuer
	es, rsa    *oauthtest.Key
	clock      *oauthtest.Clock
	v          *resource.Verifier
	keys       *resource.RemoteKeys
	logs       *logSink
	sec        *secrets
	adminRuns  atomic.Int64
	forwardErr atomic.Pointer[error]
	apiHits    atomic.Int64
	served     atomic.Int64 // requests that reached the MCP handler
	eventsMu   sync.Mutex
	events     []resource.Event
}

// lastEvent returns the most recent audit event.
func (e *rsEnv) lastEvent() resource.Event {
	e.eventsMu.Lock()
	defer e.eventsMu.Unlock()
	if len(e.events) == 0 {
		return resource.Event{}
	}
	return e.events[len(e.events)-1]
}

func newRSEnv(t *testing.T) *rsEnv {
	t.Helper()
	return newRSEnvWith(t, nil)
}

// newRSEnvWith is newRSEnv with the middleware's configuration changed by
// mutate (nil: unchanged).
func newRSEnvWith(t *testing.T, mutate func(*resource.Config)) *rsEnv {
	t.Helper()
	e := &rsEnv{t: t, net: newVNet(t), clock: oauthtest.NewClock(oauthtest.Epoch()), logs: &logSink{}, sec: &secrets{}}
	e.sec.Watch(e.logs)
	e.es = oauthtest.NewKey(t, oauthtest.ES256, "es-1")
	e.rsa = oauthtest.NewKey(t, oauthtest.RS256, "rsa-1")
	e.iss = newKeyIssuer(t, e.net, "as.example.com", e.es, e.rsa)
	e.net.Serve("api.example.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.apiHits.Add(1)
		t.Error("RS-19: the upstream API received a request from a tool that carried the inbound token")
	}))
	keys, err := resource.NewRemoteKeys(*nethook.Set(&resource.RemoteKeysConfig{
		Issuer: e.iss.Issuer, TLSConfig: e.net.TLS(),
		Logger: e.logs.Logger(), Now: e.clock.Now, Timeout: time.Second,
	}, nethook.Net{Resolver: e.net, Dial: e.net.Dial}))
	if err != nil {
		t.Fatal(err)
	}
	e.keys = keys
	t.Cleanup(func() { keys.Close() })
	warmKeys(t, keys, e.clock, e.es.ID)
	cfg := resource.Config{
		Resource: mcpResource,
		Issuers:  []resource.Issuer{{Issuer: e.iss.Issuer, Keys: keys}},
		Policy: &resource.Policy{Default: []string{"mcp:tools"},
			Tools: map[string][]string{"admin_tool": {"admin"}}},
		Logger: e.logs.Logger(),
		Audit: func(_ context.Context, ev resource.Event) {
			e.eventsMu.Lock()
			e.events = append(e.events, ev)
			e.eventsMu.Unlock()
		},
		Now: e.clock.Now,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e.v, err = resource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.v.Close() })
	mux := http.NewServeMux()
	inner := e.mcpHandler()
	e.v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.served.Add(1)
		inner.ServeHTTP(w, r)
	}))
	e.net.Serve(mcpHost, mux)
	return e
}

type forwardArgs struct {
	Where string `json:"where"`
	Token string `json:"token"`
}

func (e *rsEnv) mcpHandler() http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		info := resource.TokenInfoFromContext(ctx)
		if info == nil {
			return nil, nil, errors.New("no identity")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: info.Subject}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "admin_tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		e.adminRuns.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	guarded := &http.Client{Transport: e.v.GuardTransport(e.net.Transport()), Timeout: 5 * time.Second}
	mcp.AddTool(server, &mcp.Tool{Name: "forward"}, func(ctx context.Context, req *mcp.CallToolRequest, in forwardArgs) (*mcp.CallToolResult, any, error) {
		if h := req.Extra.Header.Get("Authorization"); h != "" {
			e.t.Errorf("RS-19: the tool saw the inbound Authorization header")
		}
		target := "https://api.example.com/v1"
		out, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		switch in.Where {
		case "header":
			out.Header.Set("Authorization", "Bearer "+in.Token)
		case "basic":
			out.SetBasicAuth("tool", in.Token)
		case "query":
			out.URL.RawQuery = url.Values{"access_token": {in.Token}}.Encode()
		case "path":
			out.URL.Path = "/v1/" + in.Token
		case "custom-header":
			out.Header.Set("X-Upstream-Key", in.Token)
		}
		resp, err := guarded.Do(out)
		if err == nil {
			resp.Body.Close()
			return nil, nil, errors.New("forwarded")
		}
		e.forwardErr.Store(&err)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refused"}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		// The listener is on 127.0.0.1 only because vnet puts every public
		// host there; the SDK's localhost Host check would refuse the
		// public name mcp.example.com, so it is off. Origin is checked by
		// the middleware (TR-01).
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
}

// claims are valid claims for this resource at the env's clock.
func (e *rsEnv) claims() oauthtest.AccessToken {
	now := e.clock.Now()
	return oauthtest.AccessToken{Issuer: e.iss.Issuer, Subject: "user-1", Audience: []string{mcpResource},
		ClientID: "app", Scope: "mcp:tools", ID: "jti-1", IssuedAt: now, Expiry: now.Add(time.Hour)}
}

// token mints a valid token with the ES256 key, after mutate.
func (e *rsEnv) token(mutate func(*oauthtest.AccessToken)) string {
	c := e.claims()
	if mutate != nil {
		mutate(&c)
	}
	tok := e.es.Mint(e.t, c)
	e.sec.Add(tok)
	return tok
}

// rpc is a raw attacker request to the MCP endpoint.
type rpc struct {
	auth   []string // Authorization header values
	origin string
	query  string
	method string // JSON-RPC method; default tools/call
	name   string // tool name in the body
	header string // Mcp-Name header; default name
	args   string // raw JSON arguments; default {}
}

// result is what the attacker got back.
type result struct {
	status    int
	challenge *oauthmeta.Challenge
	header    http.Header
	body      string
}

func (e *rsEnv) send(r rpc) result {
	e.t.Helper()
	if r.method == "" {
		r.method = "tools/call"
	}
	if r.name == "" {
		r.name = "whoami"
	}
	if r.header == "" {
		r.header = r.name
	}
	if r.args == "" {
		r.args = "{}"
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + r.method + `","params":{"name":"` + r.name + `","arguments":` + r.args + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	target := mcpResource
	if r.query != "" {
		target += "?" + r.query
	}
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", r.method)
	req.Header.Set("Mcp-Name", r.header)
	for _, a := range r.auth {
		req.Header.Add("Authorization", a)
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	resp, err := e.net.Client().Do(req)
	if err != nil {
		e.t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	res := result{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...); err == nil {
		if ch, ok := oauthmeta.FindChallenge(chs, "Bearer"); ok {
			res.challenge = &ch
		}
	}
	e.sec.Seen(res.body)
	for _, vs := range resp.Header {
		e.sec.Seen(vs...)
	}
	return res
}

// errorCode is the challenge's error parameter ("" without one).
func (r result) errorCode() string {
	if r.challenge == nil {
		return ""
	}
	return r.challenge.Value(oauthmeta.ParamError)
}

// warmKeys fetches the issuer's keys once before the test starts, so that
// the key fetch's one-second bound (kept short for the tests of hanging
// key endpoints) is not what a loaded machine decides a test by. A fetch
// that fails is tried again after the refetch interval, at most three
// times in all.
func warmKeys(t *testing.T, keys *resource.RemoteKeys, clock *oauthtest.Clock, kid string) {
	t.Helper()
	var err error
	for range 3 {
		if _, err = keys.Keys(t.Context(), kid); err == nil {
			return
		}
		clock.Advance(resource.DefaultRefetchInterval + time.Second)
	}
	t.Fatalf("the issuer's keys could not be fetched: %v", err)
}
