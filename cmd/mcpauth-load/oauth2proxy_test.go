package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// TestOAuth2ProxyArgs: the command line is the JWT bearer mode of an
// operator protecting an API: the fixture's issuer, the resource as the
// audience, JWT bearer tokens verified and an invalid one refused, on a
// loopback address in front of the given upstream.
func TestOAuth2ProxyArgs(t *testing.T) {
	t.Parallel()
	args := oauth2ProxyArgs("127.0.0.1:4180", "http://127.0.0.1:9/mcp", "http://127.0.0.1:8", "http://127.0.0.1:7/mcp", "SECRET")
	value := func(flag string) (string, bool) {
		for i, a := range args {
			if a == flag && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v, true
			}
			if a == flag {
				return "true", true
			}
		}
		return "", false
	}
	for _, tc := range []struct{ flag, want string }{
		{"--http-address", "127.0.0.1:4180"},
		{"--upstream", "http://127.0.0.1:9/mcp"},
		{"--provider", "oidc"},
		{"--oidc-issuer-url", "http://127.0.0.1:8"},
		{"--client-id", "http://127.0.0.1:7/mcp"},
		{"--cookie-secret", "SECRET"},
		{"--email-domain", "*"},
		{"--skip-jwt-bearer-tokens", "true"},
		{"--bearer-token-login-fallback", "false"},
		{"--api-route", "^/mcp"},
		{"--request-logging", "false"},
	} {
		if got, ok := value(tc.flag); !ok || got != tc.want {
			t.Errorf("%s = %q (given %v), want %q", tc.flag, got, ok, tc.want)
		}
	}
	// Nothing that would weaken its checks.
	for _, a := range args {
		if strings.Contains(a, "insecure") || strings.Contains(a, "skip-oidc-discovery") || strings.Contains(a, "skip-issuer") {
			t.Errorf("weakening flag %q", a)
		}
	}
}

// TestNewCookieSecret: 32 random bytes, base64url, different every time.
func TestNewCookieSecret(t *testing.T) {
	t.Parallel()
	a, b := newCookieSecret(), newCookieSecret()
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 {
		t.Fatalf("%q: %d bytes, %v", a, len(raw), err)
	}
	if a == b {
		t.Error("two equal secrets")
	}
}

// TestOAuth2ProxyBinary: the default path is used when it exists and the
// candidate is skipped, with a message, when it does not; an explicit
// path must be an executable file; "off" skips.
func TestOAuth2ProxyBinary(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "o2p")
	plain := filepath.Join(dir, "plain")
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{exe, 0o755}, {plain, 0o644}} {
		if err := os.WriteFile(f.path, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir) // no tools/ here: the default is missing
	for _, tc := range []struct {
		name, flag, want, say string
		wantErr               bool
	}{
		{name: "default missing", flag: "", want: "", say: "candidate skipped"},
		{name: "off", flag: "off", want: ""},
		{name: "explicit", flag: exe, want: exe},
		{name: "explicit missing", flag: filepath.Join(dir, "nope"), wantErr: true},
		{name: "explicit not executable", flag: plain, wantErr: true},
		{name: "explicit directory", flag: dir, wantErr: true},
	} {
		var out bytes.Buffer
		got, err := oauth2ProxyBinary(tc.flag, &out)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: %q, %v", tc.name, got, err)
		}
		if !strings.Contains(out.String(), tc.say) || (tc.say == "" && out.Len() != 0) {
			t.Errorf("%s: said %q, want %q", tc.name, out.String(), tc.say)
		}
	}
	if err := os.MkdirAll(filepath.Dir(oauth2ProxyDefault), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oauth2ProxyDefault, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := oauth2ProxyBinary("", io.Discard); err != nil || got != oauth2ProxyDefault {
		t.Errorf("default present: %q, %v", got, err)
	}
}

// TestProbeOAuth2Proxy: the start-up probe fails on a proxy that lets a
// forged token through and passes one that refuses every probe token;
// without the candidate it does nothing.
func TestProbeOAuth2Proxy(t *testing.T) {
	t.Parallel()
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name    string
		status  int
		wantErr bool
	}{
		{"refuses 403", http.StatusForbidden, false},
		{"refuses 401", http.StatusUnauthorized, false},
		{"accepts", http.StatusOK, true},
		{"redirects to a login page", http.StatusFound, true},
	} {
		var seen []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			w.WriteHeader(tc.status)
		}))
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		var out bytes.Buffer
		err := probeRefusals(context.Background(), client, f, []*candidate{{name: "bare", url: "http://127.0.0.1:1/mcp"},
			{name: oauth2ProxyName, url: srv.URL + "/mcp"}}, oauth2ProxyName, oauth2ProxyProbeKinds, &out)
		srv.Close()
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.wantErr && (len(seen) != len(oauth2ProxyProbeKinds) || !strings.Contains(out.String(), "bad-signature")) {
			t.Errorf("%s: sent %d probes, said %q", tc.name, len(seen), out.String())
		}
		for i, tok := range seen {
			if tok != f.InvalidToken(oauth2ProxyProbeKinds[i]) {
				t.Errorf("%s: probe %d sent %q", tc.name, i, tok)
			}
		}
	}
	if err := probeRefusals(context.Background(), http.DefaultClient, f, []*candidate{{name: "bare"}}, oauth2ProxyName, oauth2ProxyProbeKinds, io.Discard); err != nil {
		t.Errorf("without the candidate: %v", err)
	}
}

// TestOAuth2ProxyTargets: the ratios appear only when the candidate runs.
func TestOAuth2ProxyTargets(t *testing.T) {
	t.Parallel()
	if got := oauth2ProxyTargets([]string{"bare", "protect"}); got != nil {
		t.Errorf("without the candidate: %v", got)
	}
	got := oauth2ProxyTargets([]string{"bare", "protect", oauth2ProxyName})
	if len(got) != 4 || !slices.ContainsFunc(got, func(x target) bool { return x.a == "protect" && x.b == oauth2ProxyName && x.wl == "fresh" }) {
		t.Errorf("targets %v", got)
	}
	r := &compareResult{names: []string{"bare", "protect", oauth2ProxyName}}
	if n := len(r.targets(false)); n != len((&compareResult{}).targets(false))+4 {
		t.Errorf("%d targets", n)
	}
}

// TestOAuth2ProxyEndToEnd runs the oauth2-proxy built by `make
// oauth2-proxy` (skipped when it is not) with the command line -compare
// gives it, in front of the load upstream, with the fixture as issuer: a
// valid ES256 token passes with its subject as X-Forwarded-User, a
// missing token gets 401, and every probe token is refused. It also pins
// the two behaviours BENCHMARKS.md states: the bearer token reaches the
// upstream, and each token with a bad signature costs a JWK Set fetch.
func TestOAuth2ProxyEndToEnd(t *testing.T) {
	t.Parallel()
	bin := filepath.Join("..", "..", oauth2ProxyDefault)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s not built (make oauth2-proxy)", oauth2ProxyDefault)
	}
	addr, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + addr + "/mcp"
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1, Audience: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	up := loadgen.NewUpstream()
	defer up.Close()
	c := &candidate{name: oauth2ProxyName, url: endpoint}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.child, err = loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: bin,
		Args: oauth2ProxyArgs(addr, up.URL, f.Issuer, endpoint, newCookieSecret()), ReadyURL: oauth2ProxyReadyURL(c)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.child.Stop(5 * time.Second); err != nil {
			t.Errorf("stop: %v\n%s", err, c.child.Tail())
		}
	}()
	client := f.Client(1)
	defer client.CloseIdleConnections()
	if err := probeRefusals(ctx, client, f, []*candidate{c}, oauth2ProxyName, oauth2ProxyProbeKinds, io.Discard); err != nil {
		t.Fatal(err)
	}
	tok, err := f.FreshToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, auth string
		want       int
		body       string
	}{
		{"valid", "Bearer " + tok, http.StatusOK, `"text":"user-fresh-`},
		{"missing", "", http.StatusUnauthorized, ""},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(loadgen.DefaultBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "whoami")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s: %d %s, want %d with %q\n%s", tc.name, resp.StatusCode, body, tc.want, tc.body, c.child.Tail())
		}
	}
	if n := up.Served.Load(); n != 1 {
		t.Errorf("upstream served %d requests, want 1", n)
	}
	// What BENCHMARKS.md says of it: by default it passes the bearer token
	// upstream (the request above had its X-Forwarded-User, so the one
	// "leak" the upstream counted is the Authorization header).
	if n := up.Leaked.Load(); n != 1 {
		t.Errorf("upstream saw %d requests with a credential or without an identity, want 1 (the forwarded token)", n)
	}
	// And: every token whose signature fails makes it fetch the JWK Set
	// again (go-oidc's remote key set), with no interval between fetches.
	before := f.JWKSFetches()
	for i := range 10 {
		kind := []string{"bad-signature", "unknown-kid"}[i%2]
		if code, err := probeStatus(ctx, client, endpoint, f.InvalidToken(kind)); err != nil || code != http.StatusForbidden {
			t.Fatalf("%s: %d, %v", kind, code, err)
		}
	}
	if n := f.JWKSFetches() - before; n != 10 {
		t.Errorf("10 tokens with a bad signature or an unknown kid caused %d JWK Set fetches, want 10 (BENCHMARKS.md says one each)", n)
	}
}
