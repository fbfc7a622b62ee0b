package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// passFixture is protect with --pass-upstream-token X-Upstream-Token in
// front of an httptest upstream, with a fake authorization server on
// 127.0.0.1 that issued the MCP tokens (static keys) and whose token
// endpoint exchanges them.
type passFixture struct {
	url, resource, issuer string
	key                   *oauthtest.Key
	logs                  syncBuffer
	asCalls               atomic.Int32
	asAnswer              atomic.Value // func(http.ResponseWriter) or nil: exchange
	as                    *httptest.Server
	mu                    sync.Mutex
	seen                  []*http.Request
}

func newPassFixture(t *testing.T, cacheTTL time.Duration) *passFixture {
	t.Helper()
	f := &passFixture{key: oauthtest.NewKey(t, oauthtest.ES256, "k1")}
	f.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.asCalls.Add(1)
		if a, _ := f.asAnswer.Load().(func(http.ResponseWriter)); a != nil {
			a(w)
			return
		}
		_ = r.ParseForm()
		id, secret, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/token" || id != "rs" || secret != "rs-secret" || r.PostForm.Get("audience") != "github" ||
			r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" || r.PostForm.Get("subject_token") == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_request"}`)
			return
		}
		_, _ = io.WriteString(w, `{"access_token":"gh-upstream-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(f.as.Close)
	f.issuer = f.as.URL
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Clone(context.Background()))
		f.mu.Unlock()
		okUpstream(w, r)
	}))
	t.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL + "/mcp")
	srv := httptest.NewUnstartedServer(nil)
	f.url = "http://" + srv.Listener.Addr().String()
	f.resource = f.url + "/mcp"
	logger := slog.New(slog.NewTextHandler(&f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pf := passUpstreamFlags{header: "x-upstream-token", tokenURL: f.as.URL + "/token", clientID: "rs",
		clientSecret: "env:RS_SECRET", audience: "github", cacheTTL: cacheTTL}
	pass, err := pf.config([]string{f.issuer}, true, func(k string) string { return map[string]string{"RS_SECRET": "rs-secret"}[k] }, logger)
	if err != nil {
		t.Fatal(err)
	}
	now := oauthtest.Epoch
	h, v, err := protectHandler(resource.Config{
		Resource:                  f.resource,
		Issuers:                   []resource.Issuer{{Issuer: f.issuer, Keys: keyset.Static{{ID: "k1", Public: f.key.Public()}}}},
		InsecureAllowHTTPLoopback: true,
		Logger:                    logger,
		Now:                       now,
	}, upURL, pass, nil, logger, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *passFixture) token(t *testing.T) string {
	return f.key.Mint(t, oauthtest.AccessToken{Issuer: f.issuer, Subject: "alice", Audience: []string{f.resource},
		ClientID: "cli", Scope: "mcp:tools", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour)})
}

func (f *passFixture) post(t *testing.T, token string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestProtectPassUpstreamToken: the protected server gets the exchanged
// upstream token in the configured header, in place of whatever the
// caller sent under that name, and never the MCP access token.
func TestProtectPassUpstreamToken(t *testing.T) {
	t.Parallel()
	f := newPassFixture(t, 0)
	tok := f.token(t)
	for range 2 {
		resp, body := f.post(t, tok, map[string]string{"X-Upstream-Token": "spoofed", "X-Forwarded-Access-Token": tok})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 2 {
		t.Fatalf("upstream saw %d requests", len(f.seen))
	}
	got := f.seen[0]
	if v := got.Header.Values("X-Upstream-Token"); len(v) != 1 || v[0] != "gh-upstream-token" {
		t.Errorf("X-Upstream-Token %q, want the upstream token", v)
	}
	for k, vs := range got.Header {
		for _, v := range vs {
			if strings.Contains(v, tok) {
				t.Errorf("the MCP token reached the upstream in %s", k)
			}
		}
	}
	if got.Header.Get("Authorization") != "" || strings.Contains(got.URL.String(), tok) {
		t.Errorf("credentials reached the upstream: %q %s", got.Header.Get("Authorization"), got.URL)
	}
	if n := f.asCalls.Load(); n != 2 {
		t.Errorf("%d exchanges without a cache, want 2", n)
	}
	if logs := f.logs.String(); strings.Contains(logs, tok) || strings.Contains(logs, "gh-upstream-token") {
		t.Errorf("a token in the logs: %s", logs)
	}
}

// TestProtectPassUpstreamTokenCache: with --exchange-cache-ttl the same MCP
// token is exchanged once.
func TestProtectPassUpstreamTokenCache(t *testing.T) {
	t.Parallel()
	f := newPassFixture(t, time.Minute)
	tok := f.token(t)
	for range 3 {
		if resp, body := f.post(t, tok, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
	}
	if n := f.asCalls.Load(); n != 1 {
		t.Errorf("%d exchanges with a cache, want 1", n)
	}
}

// TestProtectPassUpstreamTokenRefused: the status of each exchange
// failure; the protected server is never reached, and neither the answer
// nor the logs show a token.
func TestProtectPassUpstreamTokenRefused(t *testing.T) {
	t.Parallel()
	answer := func(status int, body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	for _, tc := range []struct {
		name      string
		answer    func(http.ResponseWriter)
		down      bool
		status    int
		challenge string
	}{
		{name: "revoked grant", answer: answer(http.StatusBadRequest, `{"error":"invalid_grant","error_description":"subject_token is expired or revoked"}`),
			status: http.StatusUnauthorized, challenge: `Bearer error="invalid_token"`},
		{name: "no upstream token", answer: answer(http.StatusBadRequest, `{"error":"invalid_grant","error_description":"no upstream token for this grant"}`),
			status: http.StatusUnauthorized, challenge: `Bearer error="invalid_token"`},
		{name: "authorization server down", down: true, status: http.StatusServiceUnavailable},
		{name: "identity provider unavailable", answer: answer(http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`),
			status: http.StatusServiceUnavailable},
		{name: "bad client credentials", answer: answer(http.StatusUnauthorized, `{"error":"invalid_client"}`), status: http.StatusBadGateway},
		{name: "unknown audience", answer: answer(http.StatusBadRequest, `{"error":"invalid_target"}`), status: http.StatusBadGateway},
		{name: "malformed answer", answer: answer(http.StatusOK, `{"token_type":"Bearer"}`), status: http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newPassFixture(t, time.Minute)
			if tc.answer != nil {
				f.asAnswer.Store(tc.answer)
			}
			tok := f.token(t)
			if tc.down {
				f.as.Close()
			}
			resp, body := f.post(t, tok, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, body, tc.status)
			}
			chal := strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
			if tc.challenge != "" && (!strings.Contains(chal, tc.challenge) || !strings.Contains(chal, "resource_metadata=")) {
				t.Errorf("WWW-Authenticate %q, want %s", chal, tc.challenge)
			}
			if tc.challenge == "" && chal != "" {
				t.Errorf("WWW-Authenticate %q on %d", chal, tc.status)
			}
			f.mu.Lock()
			n := len(f.seen)
			f.mu.Unlock()
			if n != 0 {
				t.Errorf("the upstream was reached %d times", n)
			}
			logs := f.logs.String()
			if !strings.Contains(logs, "upstream token exchange failed") {
				t.Errorf("the refusal is not logged: %s", logs)
			}
			for _, s := range []string{tok, "gh-upstream-token", "rs-secret"} {
				if strings.Contains(body, s) || strings.Contains(logs, s) || strings.Contains(chal, s) {
					t.Errorf("%.12s… in the answer or the logs", s)
				}
			}
		})
	}
}

func TestPassUpstreamFlags(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string { return map[string]string{"RS_SECRET": "rs-secret"}[k] }
	base := []string{"--upstream", "http://127.0.0.1:3000/mcp", "--issuer", "http://127.0.0.1:9000", "--insecure-http"}
	exchange := []string{"--exchange-token-url", "http://127.0.0.1:9000/token", "--exchange-client-id", "rs",
		"--exchange-client-secret", "env:RS_SECRET", "--upstream-audience", "github"}
	with := func(header string, extra ...string) []string {
		args := append(append(append([]string{}, base...), "--pass-upstream-token", header), exchange...)
		return append(args, extra...)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		header  string
	}{
		{"off", base, "", ""},
		{"custom header", with("x-upstream-token"), "", "X-Upstream-Token"},
		{"oauth2-proxy's name", with("X-Forwarded-Access-Token", "--exchange-cache-ttl", "30s"), "", "X-Forwarded-Access-Token"},
		{"Authorization", with("Authorization"), "reserved", ""},
		{"authorization lower case", with("authorization"), "reserved", ""},
		{"Proxy-Authorization", with("Proxy-Authorization"), "reserved", ""},
		{"Cookie", with("cookie"), "reserved", ""},
		{"DPoP", with("DPoP"), "reserved", ""},
		{"hop-by-hop Connection", with("Connection"), "reserved", ""},
		{"hop-by-hop Transfer-Encoding", with("Transfer-Encoding"), "reserved", ""},
		{"hop-by-hop TE", with("TE"), "reserved", ""},
		{"hop-by-hop Upgrade", with("Upgrade"), "reserved", ""},
		{"Host", with("Host"), "reserved", ""},
		{"MCP session", with("Mcp-Session-Id"), "reserved", ""},
		{"identity header", with("X-Forwarded-User"), "reserved", ""},
		{"space", with("X Upstream"), "not a header name", ""},
		{"colon", with("X-Upstream:"), "not a header name", ""},
		{"newline", with("X-Up\r\nX-Evil"), "not a header name", ""},
		{"underscore", with("X_Upstream"), "not a header name", ""},
		{"no exchange flags", append(append([]string{}, base...), "--pass-upstream-token", "X-Upstream-Token"), "needs --exchange-token-url", ""},
		{"exchange flags alone", append(append([]string{}, base...), exchange...), "need --pass-upstream-token", ""},
		{"literal secret", with("X-Upstream-Token", "--exchange-client-secret", "rs-secret"), "env:VAR", ""},
		{"empty secret", with("X-Upstream-Token", "--exchange-client-secret", "env:NOPE"), "NOPE is empty", ""},
		{"literal secret and a token URL of another origin", with("X-Upstream-Token", "--exchange-client-secret", "rs-secret", "--exchange-token-url", "http://127.0.0.1:9001/token"), "env:VAR", ""},
		{"literal secret and a negative cache TTL", with("X-Upstream-Token", "--exchange-client-secret", "rs-secret", "--exchange-cache-ttl", "-1s"), "env:VAR", ""},
		{"token URL of another origin", with("X-Upstream-Token", "--exchange-token-url", "http://127.0.0.1:9001/token"), "not at the origin of an --issuer", ""},
		{"negative cache TTL", with("X-Upstream-Token", "--exchange-cache-ttl", "-1s"), "negative", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseProtectFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.pass.config(f.issuers, f.insecureHTTP, getenv, slog.New(slog.DiscardHandler))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "rs-secret") {
					t.Error("the error shows the secret")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p == nil) != (tc.header == "") || (p != nil && p.header != tc.header) {
				t.Fatalf("pass %+v, want header %q", p, tc.header)
			}
		})
	}
}

// TestProtectRefusesBadPassHeaderAtStart: protect stops before listening.
func TestProtectRefusesBadPassHeaderAtStart(t *testing.T) {
	t.Parallel()
	err := runProtect(context.Background(), []string{"--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:3000/mcp",
		"--issuer", "http://127.0.0.1:9000", "--insecure-http", "--pass-upstream-token", "Authorization",
		"--exchange-token-url", "http://127.0.0.1:9000/token", "--exchange-client-id", "rs",
		"--exchange-client-secret", "env:RS_SECRET", "--upstream-audience", "github"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("runProtect = %v, want the header refused", err)
	}
}
