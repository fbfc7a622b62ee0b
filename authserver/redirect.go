package authserver

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// matchRedirectURI reports whether requested is one of registered (OAuth
// 2.1 §4.1.1, requirements AS-05 and CIMD-08): an exact string match, or,
// for http URIs whose host is a loopback IP literal, a match in everything
// but the port (RFC 8252 §7.3). "localhost" and 127.0.0.1 never match each
// other, and no other normalisation happens.
func matchRedirectURI(registered []string, requested string) bool {
	if slices.Contains(registered, requested) {
		return true
	}
	req, ok := parseLoopbackRedirect(requested)
	if !ok {
		return false
	}
	for _, r := range registered {
		reg, ok := parseLoopbackRedirect(r)
		if ok && reg.Hostname() == req.Hostname() && reg.EscapedPath() == req.EscapedPath() &&
			reg.RawQuery == req.RawQuery && reg.ForceQuery == req.ForceQuery {
			return true
		}
	}
	return false
}

// parseLoopbackRedirect parses raw if it is a plain http URI on a loopback
// IP literal, with no user information and no fragment.
func parseLoopbackRedirect(raw string) (*url.URL, bool) {
	if !strings.HasPrefix(raw, "http://") || strings.Contains(raw, "#") {
		return nil, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return nil, false
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil || addr.Zone() != "" || !addr.IsLoopback() {
		return nil, false
	}
	return u, true
}

// redirectTarget builds an authorization response (RFC 6749 §4.1.2,
// §4.1.2.1) on top of the redirect URI's own query: the given parameters,
// then state and iss (RFC 9207), each exactly once (requirements AS-06,
// AS-07).
func (s *Server) redirectTarget(redirectURI string, params url.Values, state string) string {
	if state != "" {
		params.Set("state", state)
	}
	params.Set("iss", s.cfg.Issuer)
	base, _, _ := strings.Cut(redirectURI, "#") // never present; dropped defensively
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	return base + sep + params.Encode()
}

// redirect answers with a redirect to target: 302 for the authorization
// GET, 303 after the consent POST (never 307; requirement AS-13).
func redirect(w http.ResponseWriter, r *http.Request, target string) {
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Location", target)
	w.WriteHeader(status)
}
