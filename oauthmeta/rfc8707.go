package oauthmeta

import (
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
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errField(ErrInvalidResource, "resource", "empty host")
	}
	port := u.Port()
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
	return out, nil
}

// SameResource reports whether a and b name the same resource after
// [CanonicalResource]. Invalid URIs are never the same as anything.
func SameResource(a, b string) bool {
	ca, err := CanonicalResource(a)
	if err != nil {
		return false
	}
	cb, err := CanonicalResource(b)
	if err != nil {
		return false
	}
	return ca == cb
}
