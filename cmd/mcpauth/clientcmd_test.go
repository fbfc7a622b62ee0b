package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

var demoReady = regexp.MustCompile(`listening on (http://\S+) \(authorization server.*and (http://\S+/mcp) \(MCP server\)`)

// startDemo runs `mcpauth demo --no-client` in-process and returns the
// issuer and the MCP URL.
func startDemo(t *testing.T) (issuer, mcpURL string) {
	t.Helper()
	line, stop := startCommand(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	t.Cleanup(func() {
		if code, stderr := stop(); code != 0 {
			t.Errorf("demo exit %d: %s", code, stderr)
		}
	})
	m := demoReady.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("ready line %q", line)
	}
	return m[1], m[2]
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestClientCommands drives login, call, token, logout and check against
// the demo: CL-15 step-up through `call`, the token of `token` usable as a
// bearer token, a tool error giving exit status 1, the store kept 0600
// (CL-20), and no token on stdout except from `token`.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	_, u := startDemo(t)
	store := filepath.Join(t.TempDir(), "tokens.json")
	common := []string{"--insecure-http", "--store", store, "--browser", "http"}
	cmd := func(name string, rest ...string) []string { return append(append([]string{name}, common...), rest...) }

	code, out, errOut := runCmd(t, cmd("login", "--scopes", "mcp:tools", u)...)
	if code != 0 || !strings.Contains(out, `scope "mcp:tools"`) {
		t.Fatalf("login: %d %q %s", code, out, errOut)
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CL-20: store %v %v", fi.Mode(), err)
	}
	code, out, errOut = runCmd(t, cmd("call", u, "echo", "--args", `{"message":"hi there"}`)...)
	if code != 0 || !strings.Contains(out, `"text": "hi there"`) {
		t.Fatalf("call echo: %d %q %s", code, out, errOut)
	}
	code, out, _ = runCmd(t, cmd("call", u, "echo", "--args", `{"wrong":1}`)...)
	if code != 1 || !strings.Contains(out, `"isError": true`) {
		t.Fatalf("call with a tool error: exit %d %q", code, out)
	}
	code, tok, errOut := runCmd(t, cmd("token", u)...)
	tok = strings.TrimSpace(tok)
	if code != 0 || strings.Count(tok, ".") != 2 {
		t.Fatalf("token: %d %s", code, errOut)
	}
	if status := rawToolsList(t, u, tok); status != http.StatusOK {
		t.Fatalf("the printed token as a bearer token: %d", status)
	}
	code, out, errOut = runCmd(t, "check", "--insecure-http", "--token", tok, "--step-up-tool", "admin_echo", u)
	if code != 0 || strings.Contains(out, "FAIL") || strings.Contains(out, tok) {
		t.Fatalf("check: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, cmd("call", u, "admin_echo", "--args", `{"message":"up"}`)...)
	if code != 0 || !strings.Contains(out, `"text": "UP"`) {
		t.Fatalf("CL-15: call admin_echo with step-up: %d %q %s", code, out, errOut)
	}
	for _, o := range []string{out, errOut} {
		if jwtPattern.MatchString(o) {
			t.Error("a token was printed by call")
		}
	}
	if code, out, _ = runCmd(t, cmd("logout", u)...); code != 0 || !strings.Contains(out, "logged out") {
		t.Fatalf("logout: %d %q", code, out)
	}
	data, _ := os.ReadFile(store)
	if strings.Contains(string(data), tok) {
		t.Error("the token is still stored after logout")
	}
}

// rawToolsList sends a hand-made 2026-07-28 tools/list request with tok,
// the way a script uses `mcpauth token`.
func rawToolsList(t *testing.T, u, tok string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"script","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	for k, v := range map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"} {
		req.Header.Set(k, v)
	}
	if tok == "" {
		req.Header.Del("Authorization")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
			}
		}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(data, &msg)
	if resp.StatusCode == http.StatusOK && msg.Result == nil {
		t.Errorf("no JSON-RPC result")
	}
	return resp.StatusCode
}

// TestCheckFindsBrokenServer: a server that serves everyone is reported
// with failures and exit status 1.
func TestCheckFindsBrokenServer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer srv.Close()
	code, out, errOut := runCmd(t, "check", "--insecure-http", "--json", srv.URL+"/mcp")
	var rep struct {
		Failed  bool `json:"failed"`
		Summary struct {
			Fail int `json:"fail"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if code != 1 || !rep.Failed || rep.Summary.Fail == 0 {
		t.Fatalf("exit %d, report %+v; %s", code, rep, errOut)
	}
}

func TestCheckFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"help", []string{"check", "--help"}, 0, "-step-up-tool"},
		{"no URL", []string{"check"}, 2, "missing arguments"},
		{"http without flag", []string{"check", "http://127.0.0.1:1/mcp"}, 1, "--insecure-http"},
		{"empty token env", []string{"check", "--insecure-http", "--token", "env:MCPAUTH_TEST_UNSET", "http://127.0.0.1:1/mcp"}, 1, "MCPAUTH_TEST_UNSET"},
		{"login help", []string{"login", "-h"}, 0, "-client-metadata-url"},
		{"call help", []string{"call", "-h"}, 0, "-args"},
		{"token help", []string{"token", "-h"}, 0, "-browser"},
		{"logout help", []string{"logout", "-h"}, 0, "-store"},
		{"call without tool", []string{"call", "https://mcp.example/mcp"}, 2, "missing arguments"},
		{"call bad args", []string{"call", "--store", "/nonexistent/x", "https://mcp.example/mcp", "echo", "--args", "[1]"}, 1, "--args"},
		{"login bad browser", []string{"login", "--browser", "lynx", "https://mcp.example/mcp"}, 1, "--browser"},
		{"login http elsewhere", []string{"login", "--insecure-http", "http://mcp.example/mcp"}, 1, "non-loopback"},
		{"secret without id", []string{"login", "--client-secret", "s", "https://mcp.example/mcp"}, 1, "--client-id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.out) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", code, tt.code, out+errOut, tt.out)
			}
		})
	}
}

func TestWithScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		extra    []string
		want     string
	}{
		{"adds to scope", `Bearer scope="a", resource_metadata="https://h/x"`, []string{"b"}, "a b"},
		{"no duplicates", `Bearer scope="a b"`, []string{"b", "a"}, "a b"},
		{"adds a scope parameter", `Bearer resource_metadata="https://h/x"`, []string{"c"}, "c"},
	}
	for _, tt := range tests {
		ch, err := oauthmeta.ParseChallenges(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got := withScopes(ch[0], tt.extra)
		if strings.Join(got.Scopes(), " ") != tt.want || got.Value(oauthmeta.ParamResourceMetadata) != ch[0].Value(oauthmeta.ParamResourceMetadata) {
			t.Errorf("%s: %s", tt.name, got)
		}
	}
}

func TestReadToken(t *testing.T) {
	t.Setenv("MCPAUTH_TEST_TOKEN", "from-env")
	for _, tt := range []struct{ v, stdin, want string }{
		{"plain", "", "plain"},
		{"-", "from-stdin\n", "from-stdin"},
		{"env:MCPAUTH_TEST_TOKEN", "", "from-env"},
	} {
		got, err := readToken(tt.v, strings.NewReader(tt.stdin))
		if err != nil || got != tt.want {
			t.Errorf("readToken(%q) = %q, %v", tt.v, got, err)
		}
	}
	if _, err := readToken("-", strings.NewReader("")); err == nil {
		t.Error("empty stdin accepted")
	}
}

// FuzzDisplayParsers: what the commands parse from other parties for
// display or rewriting — token payloads (demo, login), redirect locations
// (demo) and challenges (--scopes) — never panics, and a rewritten
// challenge still parses with the extra scope in it.
func FuzzDisplayParsers(f *testing.F) {
	f.Add("eyJhbGciOiJFUzI1NiJ9.eyJzY29wZSI6ImEifQ.sig", `Bearer scope="a", resource_metadata="https://h/x"`)
	f.Add("a.b", `Bearer error="insufficient_scope", scope="x y"`)
	f.Add("http://127.0.0.1/cb?code=c&state=s&iss=x", `Basic realm="r", Bearer`)
	f.Fuzz(func(t *testing.T, s, header string) {
		_ = jwtPayload(s)
		_ = redactLocation(s)
		chs, err := oauthmeta.ParseChallenges(header)
		if err != nil {
			return
		}
		for _, ch := range chs {
			if ch.Token68 != "" {
				continue
			}
			out := withScopes(ch, []string{"extra"})
			again, err := oauthmeta.ParseChallenges(out.String())
			if err != nil || len(again) != 1 || !strings.Contains(" "+again[0].Value(oauthmeta.ParamScope)+" ", " extra ") {
				t.Fatalf("rewritten challenge %q: %v %+v", out.String(), err, again)
			}
		}
	})
}

// TestBrowserWaitFollowsTimeout: the loopback listener of --browser
// system|print waits as long as --timeout, not its own five minutes.
func TestBrowserWaitFollowsTimeout(t *testing.T) {
	t.Parallel()
	for _, browser := range []string{"system", "print"} {
		f := &clientFlags{browser: browser, timeout: 12 * time.Minute}
		a, err := f.authorizer(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := a.(*client.Loopback); !ok || l.Timeout != f.timeout {
			t.Errorf("--browser %s: %#v, want a Loopback waiting %s", browser, a, f.timeout)
		}
	}
}

// TestLoginPrintsGrantedScope: login prints the issuer and the scope the
// token response granted, whatever the access token holds: a JWT without
// a "scope" claim (Ory Hydra's carry "scp"), an opaque token, and no scope
// at all, which prints none (once "scope %!q(<nil>)").
func TestLoginPrintsGrantedScope(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	hydra := key.Mint(t, oauthtest.AccessToken{Issuer: "https://hydra.example/", Subject: "alice", Audience: []string{"mcp"},
		IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour), Extra: map[string]any{"scp": []string{"mcp:tools"}}})
	tests := []struct {
		name      string
		supported []string // the resource's scopes_supported, asked for
		response  map[string]any
		want      string // what follows "logged in to URL"
	}{
		{"JWT with scp, response with scope", nil,
			map[string]any{"access_token": hydra, "token_type": "Bearer", "scope": "mcp:tools offline"}, ` (issuer ISSUER, scope "mcp:tools offline")`},
		{"opaque token, response with scope", nil,
			map[string]any{"access_token": "opaque-token", "token_type": "Bearer", "scope": "mcp:tools"}, ` (issuer ISSUER, scope "mcp:tools")`},
		{"no scope asked for or granted", nil,
			map[string]any{"access_token": hydra, "token_type": "Bearer"}, ` (issuer ISSUER)`},
		{"response without scope: as asked for", []string{"mcp:tools"},
			map[string]any{"access_token": hydra, "token_type": "Bearer"}, ` (issuer ISSUER, scope "mcp:tools")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAS(t, oauthtest.ASOptions{})
			as.Update(func(o *oauthtest.ASOptions) {
				o.Faults = map[string]http.HandlerFunc{"/token": func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(tc.response)
				}}
			})
			rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{ScopesSupported: tc.supported}, as)
			u := rs.URL + "/mcp"
			code, out, errOut := runCmd(t, "login", "--insecure-http", "--store", filepath.Join(t.TempDir(), "t.json"), "--browser", "http", u)
			if code != 0 {
				t.Fatalf("login: %d %q %s", code, out, errOut)
			}
			if want := "logged in to " + u + strings.ReplaceAll(tc.want, "ISSUER", as.URL) + "\n"; out != want {
				t.Errorf("login printed %q, want %q", out, want)
			}
		})
	}
}
