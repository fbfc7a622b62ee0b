package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestProtectAccessLog: by default the proxy logs refusals but no line per
// allowed request; --access-log adds that line. Neither contains the token.
func TestProtectAccessLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		accessLog bool
		wantAllow bool
	}{
		{"default", false, false},
		{"access log", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			p := perfFlags{accessLog: tc.accessLog}
			key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
			up := httptest.NewServer(http.HandlerFunc(okUpstream))
			t.Cleanup(up.Close)
			upURL, _ := url.Parse(up.URL + "/mcp")
			srv := httptest.NewUnstartedServer(nil)
			res := "http://" + srv.Listener.Addr().String() + "/mcp"
			h, v, err := protectHandler(resource.Config{
				Resource:                  res,
				Issuers:                   []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
				InsecureAllowHTTPLoopback: true,
				Now:                       oauthtest.Epoch,
				Logger:                    p.decisionLogger(logger),
			}, upURL, nil, nil, logger, oauthtest.Epoch)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { v.Close() })
			srv.Config.Handler = h
			srv.Start()
			t.Cleanup(srv.Close)
			tok := key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: "alice", Audience: []string{res},
				Scope: "mcp:tools", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour)})
			for _, auth := range []string{"Bearer " + tok, ""} {
				req, _ := http.NewRequest(http.MethodPost, res, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			out := logs.String()
			if got := strings.Contains(out, "decision=allow"); got != tc.wantAllow {
				t.Errorf("allow logged %v, want %v:\n%s", got, tc.wantAllow, out)
			}
			if !strings.Contains(out, "decision=deny") {
				t.Errorf("refusal not logged:\n%s", out)
			}
			if strings.Contains(out, tok) {
				t.Error("the log contains the token")
			}
		})
	}
}

// TestProxyIdentityPerToken: identity headers are computed once per
// verified token and never lent to another token's request.
func TestProxyIdentityPerToken(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, okUpstream, nil)
	alice := f.token(t, "mcp:tools")
	bob := f.key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: "bob", Audience: []string{f.resource},
		ClientID: "cli-2", Scope: "mcp:tools files:read", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour)})
	order := []struct{ tok, user, email, scopes, client string }{
		{alice, "alice", "alice@example.com", "mcp:tools", "cli"},
		{alice, "alice", "alice@example.com", "mcp:tools", "cli"},
		{bob, "bob", "", "mcp:tools files:read", "cli-2"},
		{alice, "alice", "alice@example.com", "mcp:tools", "cli"},
		{bob, "bob", "", "mcp:tools files:read", "cli-2"},
	}
	for i, o := range order {
		hdr := map[string]string{}
		if i == 3 {
			hdr[headerEmail] = "mallory@example.com" // replaced, not appended to the shared value
		}
		if resp := f.post(t, o.tok, hdr); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range order {
		h := f.seen[i].Header
		for k, want := range map[string]string{headerUser: o.user, headerEmail: o.email, headerScopes: o.scopes, headerClientID: o.client} {
			if got := strings.Join(h.Values(k), ","); got != want {
				t.Errorf("request %d: %s = %q, want %q", i, k, got, want)
			}
		}
	}
}

// TestIdentityHeadersOncePerToken: the identity headers are computed once
// per verified token, not per request: the warning their computation logs
// for a value that is not printable ASCII appears once per token however
// many requests present it, and never shows the value.
func TestIdentityHeadersOncePerToken(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	identity := identityHeaders(slog.New(slog.NewTextHandler(&logs, nil)))
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	const res = "http://127.0.0.1/mcp"
	v, err := resource.New(resource.Config{
		Resource:                  res,
		Issuers:                   []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
		InsecureAllowHTTPLoopback: true,
		Now:                       oauthtest.Epoch,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	var users []string
	h := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := identity.Value(r.Context())
		if !ok {
			t.Error("no identity")
		}
		hdr := http.Header{}
		id.set(hdr)
		users = append(users, hdr.Get(headerUser)+" "+hdr.Get(headerEmail))
	}))
	mint := func(sub string) string {
		return key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: sub, Audience: []string{res}, ClientID: "cli",
			Scope: "mcp:tools", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour),
			Extra: map[string]any{"email": sub + "@exämple.com"}})
	}
	alice, bob := mint("alice"), mint("bob")
	for _, tok := range []string{alice, alice, bob, alice, bob} {
		req := httptest.NewRequest(http.MethodPost, res, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if want := []string{"alice ", "alice ", "bob ", "alice ", "bob "}; !slices.Equal(users, want) {
		t.Errorf("identities %q, want %q", users, want)
	}
	out := logs.String()
	if n := strings.Count(out, "identity value not forwarded"); n != 2 {
		t.Errorf("computed %d times for 2 tokens over 5 requests:\n%s", n, out)
	}
	if strings.Contains(out, "exämple") {
		t.Errorf("the log shows the value:\n%s", out)
	}
}

// TestProtectPprofAddr: --pprof-addr serves the profiles on loopback only.
func TestProtectPprofAddr(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "example.com:6060", ":6060", "nonsense"} {
		p := perfFlags{pprofAddr: addr}
		if srv, _, err := p.pprofServer(slog.New(slog.DiscardHandler)); err == nil || srv != nil {
			t.Errorf("%q accepted", addr)
		}
	}
	p := perfFlags{pprofAddr: "127.0.0.1:0"}
	srv, ln, err := p.pprofServer(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
}

// TestMayHoldIdentityClaims: the claims are decoded whenever they could
// hold an email or preferred_username, escaped names included.
func TestMayHoldIdentityClaims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		claims string
		want   bool
	}{
		{`{"sub":"a","scope":"mcp:tools"}`, false},
		{`{"sub":"a","email":"a@example.com"}`, true},
		{`{"sub":"a","preferred_username":"a"}`, true},
		{`{"sub":"a","em\u0061il":"a@example.com"}`, true},
		{`{"sub":"email"}`, true}, // a value: decoded, finds nothing
	} {
		if got := mayHoldIdentityClaims([]byte(tc.claims)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.claims, got, tc.want)
		}
	}
}
