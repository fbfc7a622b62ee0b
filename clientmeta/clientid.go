package clientmeta

import (
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// maxClientIDLength bounds a client_id URL.
const maxClientIDLength = 2048

// IsURLClientID reports whether clientID is meant as a Client ID Metadata
// Document URL rather than an identifier the authorization server minted:
// it starts with "https://" or "http://" (case-insensitively). An
// authorization server routes such an identifier to a [Resolver], which
// refuses the http ones; minted identifiers never look like this.
func IsURLClientID(clientID string) bool {
	lower := ascii.ToLower(clientID[:min(len(clientID), len("https://"))])
	return strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://")
}

// ValidateClientID checks the client identifier URL rules of
// draft-ietf-oauth-client-id-metadata-document §3:
// the scheme is exactly "https", there is a host and a path other than "/",
// no "." or ".." path segment (also percent-encoded), no fragment, no user
// information. A port is allowed. A query is refused too: the draft says
// SHOULD NOT, and an identifier that differs only by its query invites
// confusion. The error wraps [ErrInvalidClientID].
func ValidateClientID(clientID string) error {
	_, err := parseClientID(clientID)
	return err
}

func parseClientID(clientID string) (*url.URL, error) {
	if clientID == "" || len(clientID) > maxClientIDLength {
		return nil, errRule("empty or too long", ErrInvalidClientID)
	}
	if hasForbiddenChar(clientID) {
		return nil, errRule("forbidden character", ErrInvalidClientID)
	}
	if !strings.HasPrefix(clientID, "https://") {
		return nil, errRule("scheme must be https", ErrInvalidClientID)
	}
	if strings.Contains(clientID, "#") {
		return nil, errRule("fragment", ErrInvalidClientID)
	}
	u, err := url.Parse(clientID)
	if err != nil {
		return nil, errRule("not a URL", ErrInvalidClientID)
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return nil, errRule("user information", ErrInvalidClientID)
	}
	if u.Hostname() == "" {
		return nil, errRule("no host", ErrInvalidClientID)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errRule("query", ErrInvalidClientID)
	}
	path := u.EscapedPath()
	if path == "" || path == "/" {
		return nil, errRule("no path", ErrInvalidClientID)
	}
	for _, seg := range strings.Split(path, "/") {
		if isDotSegment(seg) {
			return nil, errRule("dot path segment", ErrInvalidClientID)
		}
	}
	return u, nil
}

// hasForbiddenChar reports whether s holds a control character, a space,
// a backslash or a non-ASCII byte, none of which a client_id or redirect
// URI may contain.
func hasForbiddenChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r >= 0x7f || r == '\\' })
}

// isDotSegment reports whether seg is "." or "..", also percent-encoded
// (RFC 3986 §2.3: %2E is an unreserved character and equivalent to ".").
func isDotSegment(seg string) bool {
	s := strings.ReplaceAll(ascii.ToLower(seg), "%2e", ".")
	return s == "." || s == ".."
}
