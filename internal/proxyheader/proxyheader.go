// Package proxyheader is the rule by which mcpauth's reverse proxies decide
// which of a caller's request headers never reach the server behind them.
//
// A proxy that asserts the caller's identity in headers (X-Forwarded-User
// and the like) must remove whatever the caller sent under those names. It
// is not enough to remove the names as the proxy spells them: CGI, WSGI,
// PHP, Rack and many Node servers read a header name in upper or lower case
// with '-' and '_' (and, in some, any other punctuation) as the same
// character, so "X_Forwarded_User: mallory" arrives there as the proxy's
// X-Forwarded-User (oauth2-proxy GHSA-vjrc-mh2v-45x6, CVE-2025-64484). The
// rule therefore compares names in a normal form, byte by byte: ASCII
// letters in lower case, digits as they are, and every other byte as '-'.
// No Unicode case folding takes place: a header name is ASCII, and any byte
// outside it is punctuation.
package proxyheader

import "net/http"

// The header lists are read-only. identityPrefixes and identityNames are
// the headers a server behind the proxy could read as an identity asserted
// by a proxy (the proxy's own, and the conventions of others), and
// credentialNames those that carry the caller's credentials: the token, a
// proxy's credentials, a DPoP proof. Every spelling of them is removed;
// the proxy then sets its own.
var (
	identityPrefixes = [...]string{"X-Forwarded-", "X-Auth-Request-", "X-Mcpauth-"}
	identityNames    = [...]string{"Forwarded", "X-Remote-User", "Remote-User", "X-User", "X-Email", "X-Real-Ip"}
	credentialNames  = [...]string{"Authorization", "Proxy-Authorization", "Dpop"}
	// checkedNames are the headers the resource middleware in front of the
	// proxy reads and checks (the session ID, which it replaces with the
	// upstream's own, and the headers that must agree with the body): they
	// are forwarded under their canonical key, the one it checked, and no
	// other spelling.
	checkedNames = [...]string{"Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version"}
)

// Rule decides which request headers a proxy forwards. The zero Rule
// removes the identity and credential headers in every spelling and the
// checked headers in any but their canonical one; [NewRule] adds headers
// the proxy sets itself.
type Rule struct {
	set []string
}

// NewRule returns the rule for a proxy that also sets the headers named
// in set (such as a header carrying an upstream token): each is removed in
// every spelling, like the identity headers.
func NewRule(set ...string) Rule {
	return Rule{set: append([]string(nil), set...)}
}

// Drop reports whether the request header with map key k is removed before
// the request is forwarded: an identity or credential header, one the
// proxy sets, or a checked header in a spelling other than its canonical
// one.
func (r Rule) Drop(k string) bool {
	if k == "" {
		return false
	}
	// Most headers (Accept, Content-Type, User-Agent…) begin with a
	// letter no listed name begins with.
	switch normal(k[0]) {
	case 'a', 'd', 'f', 'm', 'p', 'r', 'x':
	default:
		for _, n := range r.set {
			if Same(k, n) {
				return true
			}
		}
		return false
	}
	for _, p := range identityPrefixes {
		if len(k) >= len(p) && Same(k[:len(p)], p) {
			return true
		}
	}
	if Credential(k) {
		return true
	}
	for _, n := range identityNames {
		if Same(k, n) {
			return true
		}
	}
	for _, n := range r.set {
		if Same(k, n) {
			return true
		}
	}
	for _, n := range checkedNames {
		if k != n && Same(k, n) {
			return true
		}
	}
	return false
}

// Forward returns a new header with h's entries except those the rule
// drops, sized for extra entries still to come. Value slices are shared
// with h: net/http's header values have no spare capacity, so an Add on
// the copy reallocates rather than writing into h's.
func (r Rule) Forward(h http.Header, extra int) http.Header {
	out := make(http.Header, len(h)+extra)
	for k, v := range h {
		if !r.Drop(k) {
			out[k] = v
		}
	}
	return out
}

// Credential reports whether a header name, in any spelling, carries the
// caller's credentials (Authorization, Proxy-Authorization, DPoP).
func Credential(name string) bool {
	for _, n := range credentialNames {
		if Same(name, n) {
			return true
		}
	}
	return false
}

// Same reports whether two header names have the same normal form: equal
// but for ASCII case and for the bytes other than letters and digits, which
// are all alike.
func Same(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if normal(a[i]) != normal(b[i]) {
			return false
		}
	}
	return true
}

// normal is a byte of a header name in the normal form.
func normal(c byte) byte {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return c
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return '-'
}
