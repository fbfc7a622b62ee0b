package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestProtectRateLimits: the --rate-limits file and --rate-per-identity
// reach the middleware; a user over the tool's limit gets 429 with
// Retry-After while another user still passes, and the metrics count the
// refusals under their fixed reason.
func TestProtectRateLimits(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "limits.json")
	if err := os.WriteFile(file, []byte(`{"tools":{"echo":{"per_second":0.01,"burst":2}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lf := limitsFlags{file: file, perID: 100}
	up := httptest.NewServer(http.HandlerFunc(okUpstream))
	defer up.Close()
	upURL, _ := url.Parse(up.URL + "/mcp")
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	srv := httptest.NewUnstartedServer(nil)
	res := "http://" + srv.Listener.Addr().String() + "/mcp"
	cfg := resource.Config{
		Resource:                  res,
		Issuers:                   []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
		InsecureAllowHTTPLoopback: true,
		Now:                       oauthtest.Epoch,
	}
	closeLimits, err := lf.apply(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLimits()
	if cfg.RateLimit.Identity != (resource.Rate{PerSecond: 100, Burst: 1000}) {
		t.Fatalf("identity limit %+v", cfg.RateLimit.Identity)
	}
	m := newProxyMetrics()
	h, v, err := protectHandler(cfg, upURL, nil, m, slog.New(slog.DiscardHandler), oauthtest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	tok := func(sub string) string {
		return key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: sub, Audience: []string{res}, ClientID: "cli",
			IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour)})
	}
	call := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, res, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	alice := tok("alice")
	for i := range 2 {
		if resp := call(alice); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d", i+1, resp.StatusCode)
		}
	}
	resp := call(alice)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "100" {
		t.Fatalf("third call: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := call(tok("bob")); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob: %d", resp.StatusCode)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `mcpauth_protect_decisions_total{decision="deny",reason="rate limit exceeded"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("metrics lack %s", want)
	}
}

// TestProtectRateLimitFlags: refusals of the rate-limit flags.
func TestProtectRateLimitFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"identity":{"per_second":1}}`), 0o600)
	base := []string{"protect", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp", "--insecure-http", "--issuer", "https://as.example"}
	for _, tt := range []struct {
		name string
		args []string
		out  string
	}{
		{"bad file", []string{"--rate-limits", bad}, "--rate-limits"},
		{"burst alone", []string{"--rate-identity-burst", "5"}, "needs --rate-per-identity"},
		{"negative rate", []string{"--rate-per-identity", "-1"}, "must be a positive number"},
		{"redis without limits", []string{"--rate-limit-redis-url", "redis://127.0.0.1:1"}, "needs --rate-limits"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr syncBuffer
			code := run(context.Background(), append(append([]string{}, base...), tt.args...), &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tt.out) {
				t.Fatalf("exit %d; stderr %q lacks %q", code, stderr.String(), tt.out)
			}
		})
	}
}
