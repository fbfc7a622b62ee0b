package resource

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// minCandidate is the shortest header or query value the guard looks up in
// the verified-token caches.
const minCandidate = 16

// GuardTransport returns an [http.RoundTripper] for the outbound calls of
// the wrapped handler (its tools' calls to upstream APIs) that refuses,
// with a [*PassthroughError] and without sending anything, any request
// that carries an inbound access token (MCP Security Best
// Practices, "Token Passthrough"). It looks in every header value
// (including decoded Basic credentials), the query parameters and the
// whole URL for:
//
//   - the token of the inbound request whose context the outbound request
//     carries (http.NewRequestWithContext with the handler's context), and
//   - any token currently in the Verifier's verified-token cache or
//     introspection cache, whatever context the request carries.
//
// Base nil means http.DefaultTransport. Upstream calls need their own
// tokens, obtained separately (for example by RFC 8693 token exchange).
// The transport is safe for concurrent use.
func (v *Verifier) GuardTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &guardTransport{v: v, base: base}
}

type guardTransport struct {
	v    *Verifier
	base http.RoundTripper
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if where := g.v.findInboundToken(req); where != "" {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		if g.v.audit != nil || g.v.logger != nil {
			e := Event{Time: g.v.clock.Now(), Decision: DecisionPassthroughBlocked, Reason: "inbound token in " + where,
				HTTPMethod: req.Method, Path: req.URL.Host, Err: ErrTokenPassthrough}
			if info := TokenInfoFromContext(req.Context()); info != nil {
				e.Issuer, e.Subject, e.ClientID = info.Issuer, info.Subject, info.ClientID
			}
			g.v.record(req.Context(), e)
		}
		return nil, &PassthroughError{Where: where}
	}
	return g.base.RoundTrip(req)
}

// findInboundToken names where req carries an inbound token, or "". It
// is a detector, so its names and schemes are matched with Unicode case
// folding (strings.EqualFold), which can only find more.
func (v *Verifier) findInboundToken(req *http.Request) string {
	known := v.knownToken
	if tok := inboundToken(req.Context()); tok != "" {
		known = func(s string) bool { return strings.Contains(s, tok) || v.knownToken(s) }
	}
	for name, vals := range req.Header {
		for _, val := range vals {
			if known(val) || (strings.EqualFold(name, "Authorization") && known(basicPassword(val))) {
				return "header " + name
			}
		}
	}
	if req.URL == nil {
		return ""
	}
	for name, vals := range req.URL.Query() {
		for _, val := range vals {
			if known(val) {
				return "query parameter " + name
			}
		}
	}
	if s := req.URL.String(); known(s) {
		return "URL"
	}
	if u, err := url.PathUnescape(req.URL.EscapedPath()); err == nil && known(u) {
		return "URL"
	}
	return ""
}

// knownToken reports whether s contains a token the Verifier currently
// holds as verified: s itself, or any of its pieces split at separators
// common in headers ("Bearer x", "a, b", "k=v; k2=v2").
func (v *Verifier) knownToken(s string) bool {
	if len(s) < minCandidate || (v.cache == nil && v.introspector == nil) {
		return false
	}
	now := v.clock.Now()
	check := func(c string) bool {
		return len(c) >= minCandidate && (v.cache.get(c, now) != nil ||
			(v.introspector != nil && v.introspector.pos.get(c, now) != nil))
	}
	if check(s) {
		return true
	}
	for _, piece := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == ',' || r == ';' || r == '"' || r == '\t'
	}) {
		if check(piece) {
			return true
		}
		if _, val, ok := strings.Cut(piece, "="); ok && check(val) {
			return true
		}
	}
	return false
}

// basicPassword decodes "Basic base64(user:pass)" and returns "user:pass",
// or "".
func basicPassword(h string) string {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return ""
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return ""
	}
	return strings.ReplaceAll(string(dec), ":", " ")
}
