package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunDispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no command", nil, 2, "usage"},
		{"help", []string{"help"}, 0, "authserver"},
		{"unknown", []string{"frobnicate"}, 2, "unknown command"},
		{"demo help", []string{"demo", "--help"}, 0, "-addr-as"},
		{"demo bad consent", []string{"demo", "--consent", "deny"}, 1, "--consent"},
		{"demo non-loopback address", []string{"demo", "--addr-as", "0.0.0.0:0"}, 1, "loopback"},
		{"demo bad log format", []string{"demo", "--log-format", "xml"}, 1, "--log-format"},
		{"bad flag", []string{"authserver", "--nope"}, 2, "flag provided but not defined"},
		{"stray argument", []string{"authserver", "extra"}, 2, "unexpected arguments"},
		{"http issuer without --insecure-http", []string{"authserver", "--addr", "127.0.0.1:0"}, 1, "--insecure-http"},
		{"bad consent mode", []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "maybe"}, 1, "consent"},
		{"bad client", []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--client", "redirect=x"}, 1, "id= is required"},
		{"bad fault", []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--insecure-fault", "chaos"}, 1, "unknown fault"},
		{"non-loopback http issuer", []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--issuer", "http://as.example.com"}, 1, "Issuer"},
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

func TestParseClient(t *testing.T) {
	t.Setenv("MCPAUTH_TEST_SECRET", "from-env")
	tests := []struct {
		spec    string
		wantErr bool
		check   func(id, secret string, redirects []string) bool
		scopes  string // DefaultScopes | AllowedScopes
	}{
		{"id=a,redirect=http://127.0.0.1/cb", false, func(id, s string, r []string) bool { return id == "a" && s == "" && len(r) == 1 }, ""},
		{"id=a,secret=s,redirect=https://x.example/1,redirect=https://x.example/2", false, func(id, s string, r []string) bool { return s == "s" && len(r) == 2 }, ""},
		{"id=a,secret=env:MCPAUTH_TEST_SECRET,redirect=https://x.example/1", false, func(_, s string, _ []string) bool { return s == "from-env" }, ""},
		{"id=a,secret=env:MCPAUTH_TEST_UNSET_VAR", true, nil, ""},
		{"id=a,redirect=http://127.0.0.1/cb,scope=mcp:tools,allowed-scope=mcp:tools,allowed-scope=mcp:admin", false, func(id, _ string, _ []string) bool { return id == "a" },
			"mcp:tools | mcp:tools mcp:admin"},
		{"id=a,colour=blue", true, nil, ""},
		{"id", true, nil, ""},
		{"secret=x", true, nil, ""},
	}
	for _, tt := range tests {
		c, err := parseClient(tt.spec)
		if (err != nil) != tt.wantErr {
			t.Fatalf("parseClient(%q) = %v", tt.spec, err)
		}
		scopes := strings.Join(c.DefaultScopes, " ") + " | " + strings.Join(c.AllowedScopes, " ")
		if err == nil && (!tt.check(c.ID, c.Secret, c.RedirectURIs) || tt.scopes != "" && scopes != tt.scopes) {
			t.Fatalf("parseClient(%q) = %+v", tt.spec, c)
		}
	}
}

// TestAuthserverServes starts the subcommand the way the conformance script
// does, runs a code flow against it, and stops it with a cancelled context
// (what SIGINT/SIGTERM do).
func TestAuthserverServes(t *testing.T) {
	t.Parallel()
	issuer, stop := startAuthserverIssuer(t, "--consent", "auto", "--insecure-http",
		"--client", "id=conformance-client,redirect=http://127.0.0.1:1/callback")
	if !strings.HasPrefix(issuer, "http://127.0.0.1:") {
		t.Fatalf("issuer %q", issuer)
	}
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := hc.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var m oauthmeta.AuthServerMetadata
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if m.Issuer != issuer || !m.ClientIDMetadataDocumentSupported || !m.SupportsS256() {
		t.Fatalf("metadata %+v", m)
	}

	v := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"conformance-client"}, "state": {"s"},
		"redirect_uri": {"http://127.0.0.1:1/callback"}, "code_challenge": {pkce.Challenge(v)}, "code_challenge_method": {"S256"}}
	resp, err = hc.Get(m.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc.Query().Get("iss") != issuer || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %s", resp.StatusCode, loc)
	}
	resp, err = hc.PostForm(m.TokenEndpoint, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {v}, "client_id": {"conformance-client"}, "redirect_uri": {"http://127.0.0.1:1/callback"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token: %d", resp.StatusCode)
	}

	code, errOut := stop()
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
	if strings.Contains(errOut, loc.Query().Get("code")) {
		t.Fatal("a code was logged")
	}
}

// TestEveryCommandHelp: -h prints each command's usage and exits 0, and the
// flag package's default printing (which calls String on a zero flag value)
// finds nothing that panics.
func TestEveryCommandHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr syncBuffer
			code := run(context.Background(), []string{c.name, "-h"}, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != 0 || strings.Contains(out, "panic") || !strings.Contains(out, "usage: mcpauth "+c.name) {
				t.Fatalf("mcpauth %s -h: exit %d, output:\n%s", c.name, code, out)
			}
		})
	}
}
