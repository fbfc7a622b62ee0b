package resource

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// originSet is the Origin allowlist: normalized origins.
type originSet map[string]struct{}

// check applies the Origin allowlist (MCP 2026-07-28
// Streamable HTTP "Security Warning"): a request without Origin passes, a
// present Origin must be the resource's own origin or a configured one.
// It returns the allowed Origin for the CORS response headers.
func (o originSet) check(r *http.Request) (string, error) {
	vals := r.Header["Origin"]
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		if _, ok := o[normalizeOrigin(vals[0])]; ok {
			return vals[0], nil
		}
	}
	return "", errOriginNotAllowed
}

// setCORS adds the response headers for an allowed cross-origin request;
// WWW-Authenticate (and, with DPoP, DPoP-Nonce) is exposed so browser
// clients can read challenges (RFC 9449 §8), and Mcp-Session-Id so
// they can continue a session.
func setCORS(w http.ResponseWriter, origin, expose string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", expose)
}

// preflight answers OPTIONS without authentication: a CORS
// preflight from an allowed origin gets the allowed methods and headers, any
// other OPTIONS the Allow header. It never reaches the wrapped handler.
func preflight(w http.ResponseWriter, r *http.Request, origin string) {
	h := w.Header()
	h.Set("Allow", "GET, POST, DELETE, OPTIONS")
	if origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		h.Set("Access-Control-Allow-Headers", allowedRequestHeaders(r.Header.Get("Access-Control-Request-Headers")))
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

// mcpRequestHeaders are the request headers of MCP's Streamable HTTP
// transport, which every preflight allows.
const mcpRequestHeaders = "Authorization, DPoP, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, Content-Type, Accept"

// allowedRequestHeaders is the MCP set, followed by the requested header
// names when they are all valid tokens (MCP has open-ended Mcp-Param-*
// headers).
func allowedRequestHeaders(requested string) string {
	if requested == "" || len(requested) > 1024 {
		return mcpRequestHeaders
	}
	for name := range strings.SplitSeq(requested, ",") {
		if name = strings.TrimSpace(name); name == "" || strings.Trim(name, headerTokenChars) != "" {
			return mcpRequestHeaders
		}
	}
	return mcpRequestHeaders + ", " + requested
}

// headerTokenChars are the characters of a header name (RFC 9110 §5.6.2 tchar).
const headerTokenChars = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// originOf returns the RFC 6454 serialisation of u's origin.
func originOf(u *url.URL) string {
	return normalizeOrigin(u.Scheme + "://" + u.Host)
}

// canonicalOrigin checks one configured origin.
func canonicalOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%w: allowed origin %q is not scheme://host[:port]", ErrInvalidConfig, o)
	}
	return originOf(u), nil
}

// normalizeOrigin lower-cases an origin and drops a default port, so
// "HTTPS://App.example.com:443" and "https://app.example.com" compare equal.
func normalizeOrigin(o string) string {
	o = ascii.ToLower(o)
	switch {
	case strings.HasPrefix(o, "https://"):
		o = strings.TrimSuffix(o, ":443")
	case strings.HasPrefix(o, "http://"):
		o = strings.TrimSuffix(o, ":80")
	}
	return o
}
