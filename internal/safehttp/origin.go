package safehttp

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// credentialHeaders are the request headers that carry credentials meant
// for one origin: an access token (Authorization), a DPoP proof bound to
// one URL and method (RFC 9449 §4.2, htu and htm), and cookies.
var credentialHeaders = [...]string{"Authorization", "Dpop", "Cookie", "Cookie2"}

// SameOrigin reports whether a and b have the same origin (RFC 6454 §4):
// scheme, host and port, with the scheme's default port made explicit and
// scheme and host compared without regard to case. Go's own redirect
// policy compares host names only, so it keeps Authorization and Cookie on a
// redirect to another port, to plain http, or to a subdomain.
func SameOrigin(a, b *url.URL) bool {
	if a == nil || b == nil || a.Host == "" || b.Host == "" {
		return false
	}
	return ascii.EqualFold(a.Scheme, b.Scheme) &&
		ascii.EqualFold(a.Hostname(), b.Hostname()) &&
		originPort(a) == originPort(b)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch ascii.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// OnRedirect returns req as it may be sent on a hop of a redirect chain:
// when req was made by following a redirect (http.Request.Response is set,
// as *http.Client does on every such request), it loses its DPoP header (a
// proof names the URL and method it was made for, RFC 9449 §4.2; the
// layer that adds proofs makes a fresh one where one belongs) and, when
// its origin differs from that of the request that started the chain, its
// Authorization and Cookie headers as well. Whatever CheckRedirect policy
// the *http.Client has, a credential then goes only to the origin it was
// attached for. req itself is never modified: a stripped request is a
// clone. A chain that cannot be followed back to its first request (a
// Response without its Request) counts as cross-origin.
//
// Transports call it first, before adding credentials of their own.
func OnRedirect(req *http.Request) *http.Request {
	if req.Response == nil {
		return req
	}
	strip := []string{"Dpop"}
	if !SameOrigin(req.URL, chainOrigin(req)) {
		strip = credentialHeaders[:]
	}
	if !hasAny(req.Header, strip) {
		return req
	}
	out := req.Clone(req.Context())
	for _, h := range strip {
		out.Header.Del(h)
	}
	return out
}

// chainOrigin returns the URL of the first request of req's redirect
// chain, or nil when the chain is broken.
func chainOrigin(req *http.Request) *url.URL {
	r := req
	for i := 0; r.Response != nil; i++ {
		if r.Response.Request == nil || i > 64 {
			return nil
		}
		r = r.Response.Request
	}
	return r.URL
}

func hasAny(h http.Header, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return h.Values(n) != nil })
}
