package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestProxyForwardsOnlyAcceptedEmail: X-Forwarded-Email carries the
// token's "email" only when it is an address by the allow-list's rules;
// the forms an upstream could read as an address at example.com
// (CVE-2026-40574) are left out, and X-Forwarded-User still goes.
func TestProxyForwardsOnlyAcceptedEmail(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t, okUpstream, nil)
	tests := []struct{ email, want string }{
		{"alice@example.com", "alice@example.com"},
		{"Alice@Example.COM", "Alice@Example.COM"},
		{"attacker@evil.com@example.com", ""},
		{"a%40evil.com@example.com", ""},
		{"attacker@evil.com%00@example.com", ""},
		{`"a@b"@example.com`, ""},
		{"a @example.com", ""},
		{"alice@example.com.", ""},
		{"alice", ""},
	}
	for i, tc := range tests {
		tok := f.key.Mint(t, oauthtest.AccessToken{Issuer: testIssuer, Subject: "alice", Audience: []string{f.resource},
			ClientID: "cli", Scope: "mcp:tools", IssuedAt: oauthtest.Epoch(), Expiry: oauthtest.Epoch().Add(time.Hour),
			Extra: map[string]any{"email": tc.email}})
		if resp := f.post(t, tok, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: status %d", tc.email, resp.StatusCode)
		}
		f.mu.Lock()
		h := f.seen[i].Header
		f.mu.Unlock()
		if got := h.Values(headerEmail); len(got) > 1 || h.Get(headerEmail) != tc.want || h.Get(headerUser) != "alice" {
			t.Errorf("email %q: forwarded %s %q, %s %q; want %q", tc.email, headerEmail, got, headerUser, h.Get(headerUser), tc.want)
		}
	}
}
