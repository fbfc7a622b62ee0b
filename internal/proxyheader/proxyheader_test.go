package proxyheader

import (
	"net/http"
	"strings"
	"testing"
)

func TestSame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"X-Forwarded-User", "X-Forwarded-User", true},
		{"X_Forwarded_User", "X-Forwarded-User", true},
		{"x_forwarded_user", "X-Forwarded-User", true},
		{"X-Forwarded_Email", "X-Forwarded-Email", true},
		{"X_UPSTREAM_TOKEN", "X-Upstream-Token", true},
		{"X.Forwarded.User", "X-Forwarded-User", true},
		{"X~Forwarded*User", "X-Forwarded-User", true},
		{"AUTHORIZATION", "Authorization", true},
		{"dPoP", "Dpop", true},
		{"X-Forwarded-User2", "X-Forwarded-User", false},
		{"X-Forwarded-Use", "X-Forwarded-User", false},
		{"X-Forwarded-Usar", "X-Forwarded-User", false},
		{"X-Forwarded-0ser", "X-Forwarded-User", false},
		{"X-Forwarded-User", "X-Forwarded-Users", false},
		{"", "", true},
		{"", "Dpop", false},
		// No Unicode case folding: the Kelvin sign and the long s are not
		// k and s, and a byte outside ASCII is punctuation, not a letter.
		{"X-Forwarded-Us\u017fr", "X-Forwarded-User", false},
		{"\u212aey", "Key", false},
		{"X-Forwarded-User\xff", "X-Forwarded-User-", true},
		// Digits are not punctuation.
		{"X-1", "X-2", false},
		{"X-1", "X_1", true},
	}
	for _, tc := range tests {
		if got := Same(tc.a, tc.b); got != tc.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := Same(tc.b, tc.a); got != tc.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestRuleDrop(t *testing.T) {
	t.Parallel()
	pass := NewRule("X-Upstream-Token")
	tests := []struct {
		key        string
		zero, pass bool // dropped by Rule{} and by pass
	}{
		// Identity headers, in every spelling.
		{"X-Forwarded-User", true, true},
		{"X_Forwarded_User", true, true},
		{"X_forwarded_user", true, true},
		{"x_forwarded_user", true, true},
		{"X-Forwarded_Email", true, true},
		{"X_FORWARDED_EMAIL", true, true},
		{"X.Forwarded.Preferred.Username", true, true},
		{"X_Forwarded_For", true, true},
		{"X_Forwarded_Anything", true, true},
		{"X-Auth-Request-User", true, true},
		{"X_Auth_Request_User", true, true},
		{"x_auth_request_email", true, true},
		{"X_Mcpauth_Sub", true, true},
		{"Forwarded", true, true},
		{"X_Remote_User", true, true},
		{"Remote_User", true, true},
		{"X_User", true, true},
		{"X_Email", true, true},
		{"X_Real_IP", true, true},
		// Credentials.
		{"Authorization", true, true},
		{"authorization", true, true},
		{"Proxy-Authorization", true, true},
		{"Proxy_Authorization", true, true},
		{"Dpop", true, true},
		{"DPOP", true, true},
		// The proxy's own header, only when it sets it.
		{"X-Upstream-Token", false, true},
		{"X_Upstream_Token", false, true},
		{"X_UPSTREAM_TOKEN", false, true},
		{"x-upstream_token", false, true},
		// Checked headers: the canonical key is the one checked; any other
		// spelling goes.
		{"Mcp-Session-Id", false, false},
		{"Mcp_Session_Id", true, true},
		{"mcp-session-id", true, true},
		{"Mcp-Method", false, false},
		{"Mcp_Method", true, true},
		{"Mcp-Name", false, false},
		{"MCP_NAME", true, true},
		{"Mcp-Protocol-Version", false, false},
		{"MCP-Protocol-Version", true, true},
		// Headers that are none of these.
		{"Content-Type", false, false},
		{"X_Request_Id", false, false},
		{"X-Forwarded", false, false},
		{"X-Forwardedx-User", false, false},
		{"X-Upstream-Tokens", false, false},
		{"Authorizations", false, false},
		{"Cookie", false, false},
		{"Last-Event-Id", false, false},
		// Bytes outside ASCII (which net/http refuses in a name) are
		// punctuation, never letters.
		{"X-Forwarded-Us\u017fr", true, true},
		{"X-Forwarded\u017fUser", true, true},
		{"X-Forw\u212arded-User", false, false},
	}
	for _, tc := range tests {
		if got := (Rule{}).Drop(tc.key); got != tc.zero {
			t.Errorf("Rule{}.Drop(%q) = %v, want %v", tc.key, got, tc.zero)
		}
		if got := pass.Drop(tc.key); got != tc.pass {
			t.Errorf("NewRule(X-Upstream-Token).Drop(%q) = %v, want %v", tc.key, got, tc.pass)
		}
	}
}

func TestRuleForward(t *testing.T) {
	t.Parallel()
	in := http.Header{
		"Content-Type":     {"application/json"},
		"X_forwarded_user": {"mallory"},
		"X-Forwarded-User": {"mallory"},
		"Authorization":    {"Bearer x"},
		"X_request_id":     {"r1"},
		"Mcp-Session-Id":   {"s1"},
		"Mcp_session_id":   {"s2"},
	}
	out := NewRule("X-Upstream-Token").Forward(in, 2)
	want := http.Header{"Content-Type": {"application/json"}, "X_request_id": {"r1"}, "Mcp-Session-Id": {"s1"}}
	if len(out) != len(want) {
		t.Fatalf("Forward = %v, want %v", out, want)
	}
	for k, v := range want {
		if strings.Join(out[k], ",") != strings.Join(v, ",") {
			t.Errorf("Forward[%s] = %q, want %q", k, out[k], v)
		}
	}
	out.Add("Content-Type", "text/plain")
	if len(in["Content-Type"]) != 1 {
		t.Error("an Add on the copy changed the original")
	}
}

// FuzzSame compares Same with the normal form written out with strings.Map.
func FuzzSame(f *testing.F) {
	for _, s := range [][2]string{{"X_Forwarded_User", "X-Forwarded-User"}, {"Dpop", "DPOP"}, {"a\xffb", "a.b"}, {"\u212a", "k"}} {
		f.Add(s[0], s[1])
	}
	norm := func(s string) string {
		var b strings.Builder
		for i := range len(s) {
			c := s[i]
			switch {
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			default:
				c = '-'
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := Same(a, b), norm(a) == norm(b); got != want {
			t.Fatalf("Same(%q, %q) = %v, want %v", a, b, got, want)
		}
	})
}

// BenchmarkRuleForward: the header of a typical MCP request through
// protect with --pass-upstream-token.
func BenchmarkRuleForward(b *testing.B) {
	h := http.Header{
		"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
		"Content-Length": {"120"}, "User-Agent": {"mcp-client/1"}, "Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}, "Mcp-Session-Id": {"s"},
		"Accept-Encoding": {"gzip"}, "X-Request-Id": {"r1"},
	}
	r := NewRule("X-Upstream-Token")
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Forward(h, 10)
	}
}
