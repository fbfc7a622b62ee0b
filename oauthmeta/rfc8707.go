package oauthmeta

import (
	"net/netip"
	"net/url"
	"strings"
)

// CanonicalResource returns the canonical form of an MCP server URI used as an
// RFC 8707 resource indicator and access token audience (MCP 2026-07-28,
// "Canonical Server URI"): an absolute URI without fragment or user
// information, scheme and host in lower case, the default port (443 for
// https, 80 for http) removed, and a path of exactly "/" removed. The rest of
// the path and any query are kept byte for byte, so "https://h/mcp" and
// "https://h/mcp/" stay distinct.
//
// CanonicalResource checks syntax only; whether plain http is acceptable is a
// [URLPolicy] decision.
func CanonicalResource(raw string) (string, error) {
	if raw == "" || len(raw) > maxURLLength || strings.ContainsAny(raw, " \t\r\n\x00\\") {
		return "", errField(ErrInvalidResource, "resource", "not a URI")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errField(ErrInvalidResource, "resource", "not a URI")
	}
	if u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", errField(ErrInvalidResource, "resource", "not absolute")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", errField(ErrInvalidResource, "resource", "fragment")
	}
	if u.User != nil {
		return "", errField(ErrInvalidResource, "resource", "user information")
	}
	scheme := strings.ToLower(u.Scheme) // ASCII: url.Parse accepts no other scheme
	host := u.Hostname()
	if host == "" || !asciiHost(host) {
		return "", errField(ErrInvalidResource, "resource", "invalid host")
	}
	host = strings.ToLower(host) // ASCII, as just checked
	if strings.Contains(host, ":") {
		// Only a bracketed IPv6 literal may contain colons.
		if !strings.HasPrefix(u.Host, "[") {
			return "", errField(ErrInvalidResource, "resource", "invalid host")
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return "", errField(ErrInvalidResource, "resource", "invalid host")
		}
	}
	port := u.Port()
	if !validPort(u.Host, port) {
		return "", errField(ErrInvalidResource, "resource", "invalid port")
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := u.EscapedPath()
	if path == "/" {
		path = ""
	}
	out := scheme + "://" + host + path
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	if len(out) > maxURLLength {
		return "", errField(ErrInvalidResource, "resource", "too long")
	}
	return out, nil
}

// SameResource reports whether a and b name the same resource after
// [CanonicalResource]. Invalid URIs are never the same as anything.
func SameResource(a, b string) bool {
	ca, errA := CanonicalResource(a)
	cb, errB := CanonicalResource(b)
	return errA == nil && errB == nil && ca == cb
}

// validPort reports whether the authority's port (if any) is 1 to 5 digits
// and the authority does not end in a bare colon.
func validPort(authority, port string) bool {
	if port == "" {
		return !strings.HasSuffix(authority, ":")
	}
	return len(port) <= 5 && strings.Trim(port, "0123456789") == ""
}

// asciiHost reports whether host consists of ASCII letters, digits, '-', '.',
// '_' and, for IPv6 literals, ':' only. Internationalised names must be in
// their A-label (punycode) form.
func asciiHost(host string) bool {
	return !strings.ContainsFunc(host, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':')
	})
}
