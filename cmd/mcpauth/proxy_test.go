package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const testIssuer = "https://as.example"

// proxyFixture is `mcpauth protect`'s handler in front of an httptest
// upstream, with static keys and a fixed clock.
type proxyFixture struct {
	url, resource string
	key           *oauthtest.Key
	metrics       *proxyMetrics
	mu            sync.Mutex
	seen          []*http.Request // what the upstream received
}

func newProxyFixture(t *testing.T, upstream http.HandlerFunc, policy *resource.Policy) *proxyFixture {
	t.Helper()
	f := &proxyFixture{key: oauthtest.NewKey(t, oauthtest.ES256, "k1"), metrics: newProxyMetrics()}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Clone(context.Background()))
		f.mu.Unlock()
		upstream(w, r)
	}))
	t.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL + "/upstream/mcp")
	srv := httptest.NewUnstartedServer(nil)
	f.url = "http://" + srv.Listener.Addr().String()
	f.resource = f.url + "/mcp"
	now := oauthtest.Epoch
	h, v, err := protectHandler(resource.Config{
		Resource:                  f.resource,
		Issuers:                   []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: f.key.Public()}}}},
		Policy:                    policy,
		InsecureAllowHTTPLoopback: true,
		Now:                       now,
	}, upURL, nil, f.metrics, slog.New(slog.DiscardHandler), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *proxyFixture) token(t *testing.T, scope string) string {
	return f.key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: "alice", Audience: []string{f.resource},
		ClientID: "cli", Scope: scope, IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour),
		Extra: map[string]any{"email": "alice@example.com"}})
}

func (f *proxyFixture) post(t *testing.T, token string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func okUpstream(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

// TestProxyForwardsIdentityNotCredentials: RS-19 (the inbound token never
// reaches the upstream) and the oauth2-proxy identity convention (spoofed
// identity headers replaced by the validated claims).
func TestProxyForwardsIdentityNotCredentials(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, okUpstream, nil)
	resp := f.post(t, f.token(t, "mcp:tools"), map[string]string{
		"X-Forwarded-User":    "mallory",
		"X-Forwarded-Scopes":  "admin",
		"X-Auth-Request-User": "mallory",
		"X-Remote-User":       "mallory",
		"Proxy-Authorization": "Basic bWFsbG9yeTp4",
		"DPoP":                "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", // ignored with DPoP off, never forwarded
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 1 {
		t.Fatalf("upstream saw %d requests", len(f.seen))
	}
	got := f.seen[0]
	want := map[string]string{
		"Authorization": "", "Proxy-Authorization": "", "DPoP": "", "X-Auth-Request-User": "", "X-Remote-User": "",
		headerUser: "alice", headerEmail: "alice@example.com", headerScopes: "mcp:tools", headerClientID: "cli", headerIssuer: testIssuer,
		"X-Forwarded-Proto": "http", "X-Forwarded-For": "127.0.0.1",
	}
	for k, v := range want {
		if g := got.Header.Get(k); g != v {
			t.Errorf("upstream header %s = %q, want %q", k, g, v)
		}
	}
	if got.URL.Path != "/upstream/mcp" {
		t.Errorf("upstream path %q", got.URL.Path)
	}
	if strings.Contains(got.Host, strings.TrimPrefix(f.url, "http://")) {
		t.Errorf("upstream Host %q is the proxy's", got.Host)
	}
}

// TestProxyStreamsEvents: TR-10 — an event stream reaches the client event
// by event: the upstream sends its second event only after the client has
// read the first, which a buffering proxy would never deliver. A response
// of unknown length (chunked, not an event stream) also reaches the client
// write by write, although the proxy does not flush responses of known
// length after every write.
func TestProxyStreamsEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, contentType string
		format            func(string) string // an upstream write
		line              func(string) string // the line that carries it
		exact             bool                // no other line comes first
		accel             string              // X-Accel-Buffering
	}{
		{"event stream", "text/event-stream", func(s string) string { return "event: message\ndata: " + s + "\n\n" },
			func(s string) string { return "data: " + s }, false, "no"},
		{"unknown length", "application/x-ndjson", func(s string) string { return s + "\n" },
			func(s string) string { return s }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			f := newProxyFixture(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.format("first"))
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, tc.format("second"))
			}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // guards a hang only
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.resource, strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:tools"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Header.Get("X-Accel-Buffering"); got != tc.accel {
				t.Errorf("TR-10: X-Accel-Buffering %q, want %q", got, tc.accel)
			}
			br := bufio.NewReader(resp.Body)
			for _, want := range []string{"first", "second"} {
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						t.Fatalf("stream ended before %q: %v", want, err)
					}
					if strings.TrimSpace(line) == tc.line(want) {
						break
					}
					if tc.exact {
						t.Fatalf("read %q; want %q", line, want)
					}
				}
				if want == "first" {
					close(release)
				}
			}
		})
	}
}

// TestProxyReadsBodyAfterAnswering: the proxy keeps reading the request
// body after the upstream's answer has begun. Here the upstream answers
// before it reads the body, and the client sends the body only once it has
// the answer's first event: a server that closes the request body when it
// writes the response header (net/http's HTTP/1 default) cuts the body
// off, the same close that, with an upstream that answers just after the
// last byte, tore down the upstream connection in the middle of its
// answer.
func TestProxyReadsBodyAfterAnswering(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Error(err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: ready\n\n")
		w.(http.Flusher).Flush()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		_, _ = io.WriteString(w, "data: got "+string(body)+"\n\n")
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // guards a hang only
	defer cancel()
	const message = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	pr, pw := io.Pipe()
	defer pw.Close()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) }) // the client waits for its body's writer
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.resource, pr)
	req.ContentLength = int64(len(message))
	req.Header.Set("Authorization", "Bearer "+f.token(t, "mcp:tools"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer before the body was sent: %v", err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"data: ready", "data: got " + message} {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before %q: %v", want, err)
			}
			if strings.TrimSpace(line) == want {
				break
			}
		}
		if want == "data: ready" {
			go func() {
				_, _ = io.WriteString(pw, message)
				pw.Close()
			}()
		}
	}
}

// TestFullDuplexUnreadBody: a handler under full duplex that answers
// without reading the request body (a refused token exchange does) must
// not leave net/http to drain the body after the handler has returned:
// reaching the body's end then starts the connection's background read
// while the server already reads the next request, and the server panics
// with "invalid concurrent Body.Read call" and drops the connection.
func TestFullDuplexUnreadBody(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	srv := httptest.NewUnstartedServer(revproxy.FullDuplex(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})))
	srv.Config.ErrorLog = log.New(&logs, "", 0)
	srv.Start()
	defer srv.Close()
	client := srv.Client()
	for i := range 20 {
		resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	srv.Close() // waits for the connections' goroutines, and so for their log lines
	if s := logs.String(); s != "" {
		t.Errorf("server log:\n%s", s)
	}
}

// TestProxyMetadataAndChallenges: RS-01, RS-02, RS-03, RS-04 through the
// proxy; unauthenticated requests never reach the upstream.
func TestProxyMetadataAndChallenges(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, okUpstream, &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"echo": {"mcp:admin"}}})
	prmURL, _ := oauthmeta.ProtectedResourceMetadataURL(f.resource)
	resp, err := http.Get(prmURL)
	if err != nil {
		t.Fatal(err)
	}
	var md oauthmeta.ProtectedResourceMetadata
	_ = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if resp.StatusCode != 200 || md.Resource != f.resource || len(md.AuthorizationServers) != 1 {
		t.Fatalf("RS-02: metadata %d %+v", resp.StatusCode, md)
	}
	tests := []struct {
		name, token string
		status      int
		errCode     string
	}{
		{"RS-04 no token", "", 401, ""},
		{"RS-07 garbage token", "garbage", 401, "invalid_token"},
		{"RS-12 insufficient scope", f.token(t, "mcp:tools"), 403, "insufficient_scope"},
	}
	for _, tt := range tests {
		resp := f.post(t, tt.token, nil)
		ch, _ := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
		b, _ := oauthmeta.FindChallenge(ch, "Bearer")
		if resp.StatusCode != tt.status || b.Value(oauthmeta.ParamError) != tt.errCode || b.Value(oauthmeta.ParamResourceMetadata) != prmURL {
			t.Errorf("%s: %d %q", tt.name, resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 0 {
		t.Errorf("the upstream saw %d refused requests", len(f.seen))
	}
}

// TestProxyMetrics: decisions are counted by reason and requests timed.
func TestProxyMetrics(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, okUpstream, nil)
	f.post(t, f.token(t, "mcp:tools"), nil)
	f.post(t, "", nil)
	rec := httptest.NewRecorder()
	f.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := rec.Body.String()
	for _, want := range []string{
		`mcpauth_protect_decisions_total{decision="allow",reason="ok"} 1`,
		`mcpauth_protect_decisions_total{decision="deny",reason="resource: no access token"} 1`,
		`mcpauth_protect_request_duration_seconds_count{decision="allow"} 1`,
		`mcpauth_protect_request_duration_seconds_count{decision="deny"} 1`,
		`mcpauth_protect_upstream_duration_seconds_count{code="2xx"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestProtectFlags: refusals of the command line (RS-24: plain http only to
// loopback and only when asked).
func TestProtectFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"defualt":["x"]}`), 0o600)
	base := []string{"protect", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp"}
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"help", []string{"protect", "-h"}, 0, "-upstream"},
		{"no upstream", []string{"protect", "--issuer", "https://as.example"}, 2, "--upstream"},
		{"no issuer", base, 2, "--issuer"},
		{"http issuer without flag", append(base, "--issuer", "http://127.0.0.1:9000"), 1, "--insecure-http"},
		{"http issuer elsewhere", append(base, "--insecure-http", "--issuer", "http://as.example"), 1, "non-loopback"},
		{"http resource elsewhere", append(base, "--insecure-http", "--issuer", "https://as.example", "--resource", "http://mcp.example/mcp"), 1, "non-loopback"},
		{"bad policy", append(base, "--insecure-http", "--issuer", "https://as.example", "--policy", bad), 1, "--policy"},
		{"bad introspection client", append(base, "--insecure-http", "--issuer", "https://as.example", "--introspect-url", "https://as.example/introspect", "--introspect-client", "x"), 1, "--introspect-client"},
		{"bad log format", append(base, "--issuer", "https://as.example", "--log-format", "xml"), 1, "--log-format"},
		{"session key on the command line", append(base, "--insecure-http", "--issuer", "https://as.example", "--session-key", "0123456789abcdef0123456789abcdef"), 1, "env:VAR"},
		{"session key from an unset variable", append(base, "--insecure-http", "--issuer", "https://as.example", "--session-key", "env:MCPAUTH_TEST_UNSET_SESSION_KEY"), 1, "at least 32 bytes"},
		{"DPoP nonces without DPoP", append(base, "--insecure-http", "--issuer", "https://as.example", "--dpop-nonce"), 1, "need --dpop allowed or required"},
		{"DPoP nonce key without nonces", append(base, "--insecure-http", "--issuer", "https://as.example", "--dpop", "required", "--dpop-nonce-key", "AAAA"), 1, "needs --dpop-nonce"},
		{"short DPoP nonce key", append(base, "--insecure-http", "--issuer", "https://as.example", "--dpop", "required", "--dpop-nonce", "--dpop-nonce-key", "AAAA"), 1, "at least 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr syncBuffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.out) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", code, tt.code, stdout.String()+stderr.String(), tt.out)
			}
		})
	}
}

// startCommand runs a long-running subcommand in-process and returns its
// ready line; cancelling the context stops it (what SIGINT/SIGTERM do).
func startCommand(t *testing.T, args ...string) (ready string, stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, stdoutW, &stderr)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	stop = func() (int, string) {
		cancel()
		select {
		case code := <-done:
			return code, stderr.String()
		case <-time.After(30 * time.Second):
			t.Fatal("did not shut down")
			return -1, ""
		}
	}
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		code, errOut := stop()
		t.Fatalf("no ready line (%v): %q; exit %d; stderr %s", err, line, code, errOut)
	}
	return line, stop
}

// TestProtectServes runs the command: one ready line, the metadata at the
// path-inserted URL with the default resource (RS-02), /metrics, and a
// clean exit when stopped.
func TestProtectServes(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(okUpstream))
	defer up.Close()
	line, stop := startCommand(t, "protect", "--addr", "127.0.0.1:0", "--upstream", up.URL+"/api/mcp",
		"--issuer", "https://as.example", "--insecure-http", "--metrics-addr", "127.0.0.1:0", "--log-level", "warn")
	addr := strings.Fields(strings.TrimPrefix(line, "listening on "))[0]
	metrics := strings.TrimSuffix(line[strings.Index(line, "metrics ")+len("metrics "):len(line)-1], ")")
	resp, err := http.Get(addr + "/.well-known/oauth-protected-resource/api/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var md oauthmeta.ProtectedResourceMetadata
	_ = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md.Resource != addr+"/api/mcp" || md.AuthorizationServers[0] != "https://as.example" {
		t.Errorf("RS-02: metadata %+v", md)
	}
	resp, err = http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "mcpauth_protect_request_duration_seconds") {
		t.Errorf("metrics: %.300s", body)
	}
	if code, stderr := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
