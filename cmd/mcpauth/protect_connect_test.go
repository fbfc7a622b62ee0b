package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/resource"
)

// connectFixture is protect with --connect-tool list_repos=github and
// --connect-header X-Provider-Token in front of a recording upstream, with
// an authorization server on 127.0.0.1 whose token endpoint honours the
// connect contract.
type connectFixture struct {
	resource, issuer string
	key              *oauthtest.Key
	conns            *oauthtest.Connections
	logs             syncBuffer
	mu               sync.Mutex
	headers          []http.Header
	bodies           []string
}

func newConnectFixture(t *testing.T) *connectFixture {
	t.Helper()
	f := &connectFixture{key: oauthtest.NewKey(t, oauthtest.ES256, "k1")}
	f.conns = &oauthtest.Connections{ClientID: "rs", Secret: "rs-secret"}
	as := httptest.NewServer(http.HandlerFunc(f.conns.Handler))
	t.Cleanup(as.Close)
	f.issuer, f.conns.Base = as.URL, as.URL
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.headers, f.bodies = append(f.headers, r.Header.Clone()), append(f.bodies, string(b))
		f.mu.Unlock()
		okUpstream(w, r)
	}))
	t.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL + "/mcp")
	srv := httptest.NewUnstartedServer(nil)
	f.resource = "http://" + srv.Listener.Addr().String() + "/mcp"
	logger := slog.New(slog.NewTextHandler(&f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	getenv := func(k string) string { return map[string]string{"RS_SECRET": "rs-secret"}[k] }
	pass := &passUpstreamFlags{tokenURL: as.URL + "/token", clientID: "rs", clientSecret: "env:RS_SECRET", forConnect: true}
	cf := protectConnectFlags{tools: listFlag{"list_repos=github"}, header: "x-provider-token"}
	gate, err := cf.config(pass, []string{f.issuer}, true, getenv, logger, randomKey(), newConnectReplay(t))
	if err != nil {
		t.Fatal(err)
	}
	now := oauthtest.Epoch
	h, v, err := protectHandlerWith(resource.Config{
		Resource:                  f.resource,
		Issuers:                   []resource.Issuer{{Issuer: f.issuer, Keys: keyset.Static{{ID: "k1", Public: f.key.Public()}}}},
		InsecureAllowHTTPLoopback: true,
		Logger:                    logger,
		Now:                       now,
	}, upURL, nil, gate, nil, logger, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *connectFixture) token(t *testing.T, sub, client string) string {
	tok := f.key.Mint(t, oauthtest.AccessToken{Issuer: f.issuer, Subject: sub, Audience: []string{f.resource},
		ClientID: client, Scope: "mcp:tools", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour)})
	f.conns.Subject(tok, sub)
	return tok
}

// call posts a JSON-RPC message and returns the decoded answer.
func (f *connectFixture) call(t *testing.T, token, body string, hdr map[string]string) (int, map[string]json.RawMessage, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.resource, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header[k] = []string{v} // as written: spellings matter
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}

func (f *connectFixture) upstreamSaw() ([]http.Header, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...), append([]string(nil), f.bodies...)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`

func listRepos(extra string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_repos","arguments":{"org":"acme"},` + modernMeta + extra + `}}`
}

func TestProtectConnectFlow(t *testing.T) {
	t.Parallel()
	f := newConnectFixture(t)
	alice := f.token(t, "alice", "cli")
	spoof := map[string]string{"X-Provider-Token": "forged", "x_provider_token": "forged", "X-PROVIDER-TOKEN": "forged"}

	// Not connected: protect answers the elicitation; the upstream sees nothing.
	code, msg, raw := f.call(t, alice, listRepos(""), spoof)
	var res struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string            `json:"method"`
			Params map[string]string `json:"params"`
		} `json:"inputRequests"`
	}
	if code != 200 || json.Unmarshal(msg["result"], &res) != nil || string(msg["id"]) != "7" || res.ResultType != "input_required" ||
		res.RequestState == "" || res.InputRequests["connect-github"].Params["mode"] != "url" ||
		!strings.HasPrefix(res.InputRequests["connect-github"].Params["url"], f.issuer+"/connect/github?ref=") {
		t.Fatalf("first call: %d %s", code, raw)
	}
	if h, _ := f.upstreamSaw(); len(h) != 0 {
		t.Fatalf("the upstream was called %d times before the user connected", len(h))
	}

	// Connected: the retry goes upstream with the provider token, without
	// the state, and with no forged header.
	f.conns.Connect("alice", "github")
	retry := listRepos(`,"requestState":"` + res.RequestState + `","inputResponses":{"connect-github":{"action":"accept"}}`)
	code, msg, raw = f.call(t, alice, retry, spoof)
	if code != 200 || msg["error"] != nil {
		t.Fatalf("retry: %d %s", code, raw)
	}
	headers, bodies := f.upstreamSaw()
	if len(headers) != 1 {
		t.Fatalf("upstream calls: %d", len(headers))
	}
	want := oauthtest.ProviderToken("alice", "github")
	var got []string
	for k, v := range headers[0] {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Provider-Token") {
			got = append(got, v...)
		}
	}
	if len(got) != 1 || got[0] != want || headers[0].Get("Authorization") != "" {
		t.Fatalf("upstream provider headers %q (authorization %q)", got, headers[0].Get("Authorization"))
	}
	if strings.Contains(bodies[0], "requestState") || strings.Contains(bodies[0], "inputResponses") || !strings.Contains(bodies[0], `"org":"acme"`) {
		t.Fatalf("upstream body: %s", bodies[0])
	}
	if strings.Contains(raw, want) {
		t.Fatal("the MCP client saw the provider token")
	}

	// The same state again is refused.
	code, msg, raw = f.call(t, alice, retry, nil)
	if code != 200 || !strings.Contains(string(msg["error"]), `"code":-32602`) {
		t.Fatalf("replayed state: %d %s", code, raw)
	}
	// Another tool passes without any provider token, forged ones dropped.
	f.call(t, alice, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo",`+modernMeta+`}}`, spoof)
	headers, _ = f.upstreamSaw()
	for k := range headers[len(headers)-1] {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Provider-Token") {
			t.Fatalf("a call of another tool carried %s", k)
		}
	}
	logs := f.logs.String()
	if strings.Contains(logs, want) || strings.Contains(logs, alice) || strings.Contains(logs, "forged") {
		t.Fatalf("a token is in the logs:\n%s", logs)
	}
}

func TestProtectConnectRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		retry func(t *testing.T, f *connectFixture, state string) (token, body string, hdr map[string]string)
		want  string
	}{
		{name: "other user", want: `"code":-32602`, retry: func(t *testing.T, f *connectFixture, state string) (string, string, map[string]string) {
			return f.token(t, "bob", "cli"), listRepos(`,"requestState":"` + state + `"`), nil
		}},
		{name: "other client", want: `"code":-32602`, retry: func(t *testing.T, f *connectFixture, state string) (string, string, map[string]string) {
			return f.token(t, "alice", "other-cli"), listRepos(`,"requestState":"` + state + `"`), nil
		}},
		{name: "other arguments", want: `"code":-32602`, retry: func(t *testing.T, f *connectFixture, state string) (string, string, map[string]string) {
			return f.token(t, "alice", "cli"), strings.Replace(listRepos(`,"requestState":"`+state+`"`), "acme", "evil", 1), nil
		}},
		{name: "declined", want: `"isError":true`, retry: func(t *testing.T, f *connectFixture, state string) (string, string, map[string]string) {
			return f.token(t, "alice", "cli"), listRepos(`,"requestState":"` + state + `","inputResponses":{"connect-github":{"action":"decline"}}`), nil
		}},
		{name: "2025-11-25 client", want: `"code":-32042`, retry: func(t *testing.T, f *connectFixture, _ string) (string, string, map[string]string) {
			return f.token(t, "carol", "cli"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_repos","arguments":{}}}`,
				map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
		}},
		{name: "2026-07-28 client without url elicitation", want: `"code":-32021`, retry: func(t *testing.T, f *connectFixture, _ string) (string, string, map[string]string) {
			return f.token(t, "carol", "cli"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_repos","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newConnectFixture(t)
			_, msg, raw := f.call(t, f.token(t, "alice", "cli"), listRepos(""), nil)
			var res struct {
				RequestState string `json:"requestState"`
			}
			if json.Unmarshal(msg["result"], &res) != nil || res.RequestState == "" {
				t.Fatalf("first call: %s", raw)
			}
			f.conns.Connect("alice", "github")
			f.conns.Connect("bob", "github")
			tok, body, hdr := tc.retry(t, f, res.RequestState)
			code, _, raw := f.call(t, tok, body, hdr)
			if code != 200 || !strings.Contains(raw, tc.want) {
				t.Fatalf("retry: %d %s; want %s", code, raw, tc.want)
			}
			if h, _ := f.upstreamSaw(); len(h) != 0 {
				t.Fatalf("the upstream was called")
			}
			if strings.Contains(raw, "provider-secret") {
				t.Fatal("the answer shows a provider token")
			}
		})
	}
}

func TestConnectFlagsConfig(t *testing.T) {
	t.Parallel()
	pass := &passUpstreamFlags{tokenURL: "http://127.0.0.1:9/token", clientID: "rs", clientSecret: "env:S", forConnect: true}
	getenv := func(string) string { return "secret" }
	for name, c := range map[string]protectConnectFlags{
		"header without tool": {header: "X-P"},
		"tool without header": {tools: listFlag{"a=github"}},
		"not TOOL=PROVIDER":   {tools: listFlag{"github"}, header: "X-P"},
		"empty provider":      {tools: listFlag{"a="}, header: "X-P"},
		"tool twice":          {tools: listFlag{"a=github", "a=slack"}, header: "X-P"},
		"credential header":   {tools: listFlag{"a=github"}, header: "Authorization"},
		"MCP header":          {tools: listFlag{"a=github"}, header: "Mcp-Session-Id"},
		"key on the command":  {tools: listFlag{"a=github"}, header: "X-P", keyEnv: "c2VjcmV0"},
		"same header as pass": {tools: listFlag{"a=github"}, header: "X-Up"},
	} {
		p := *pass
		if name == "same header as pass" {
			p.header = "x-up"
		}
		if _, err := c.config(&p, []string{"http://127.0.0.1:9"}, true, getenv, slog.New(slog.DiscardHandler), randomKey(), newConnectReplay(t)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	noExchange := &passUpstreamFlags{forConnect: true}
	c := protectConnectFlags{tools: listFlag{"a=github"}, header: "X-P"}
	if _, err := c.config(noExchange, []string{"http://127.0.0.1:9"}, true, getenv, slog.New(slog.DiscardHandler), randomKey(), newConnectReplay(t)); err == nil {
		t.Error("--connect-tool without the --exchange-* flags accepted")
	}
}

func newConnectReplay(t *testing.T) *replay.Memory {
	t.Helper()
	m, err := replay.NewMemory(replay.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConnectGateBoundsBody: the gate reads at most the middleware's own
// body limit, whoever called it.
func TestConnectGateBoundsBody(t *testing.T) {
	called := false
	h := (&connectGate{}).wrap(nil, 16, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, http.StatusRequestEntityTooLarge},
		{`{"id":1}`, http.StatusOK},
	} {
		called = false
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(tc.body)))
		if rec.Code != tc.want || called != (tc.want == http.StatusOK) {
			t.Errorf("%d-byte body: status %d, next called %v; want %d", len(tc.body), rec.Code, called, tc.want)
		}
	}
}
