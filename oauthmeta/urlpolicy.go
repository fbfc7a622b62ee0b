package oauthmeta

import (
	"net/netip"
	"net/url"
	"strings"
)

// URLPolicy decides which URLs a document fetched from another party may name
// as endpoints (MCP Security Best Practices, "OAuth Authorization URL
// Validation"; OAuth 2.1 §1.5). The zero value is the strict production
// policy: absolute https URLs only.
type URLPolicy struct {
	// InsecureAllowHTTPLoopback also permits plain http URLs whose host is a
	// loopback address (127.0.0.0/8, ::1) or the name "localhost". It is for
	// development and tests on one machine; false (the zero value) means https
	// only. It never permits plain http to any other host.
	InsecureAllowHTTPLoopback bool
}

// CheckURL reports whether raw is an acceptable endpoint URL: absolute, with a
// host, no user information and no fragment, and scheme https (or http to a
// loopback host when the policy allows it). Every other scheme, javascript:,
// data:, file: and vbscript: included, is refused. The
// error wraps [ErrUnsafeURL] and names only the rule broken.
func (p URLPolicy) CheckURL(raw string) error {
	_, err := p.parse(raw)
	return err
}

func (p URLPolicy) parse(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errField(ErrUnsafeURL, "url", "empty")
	}
	if len(raw) > maxURLLength {
		return nil, errField(ErrUnsafeURL, "url", "too long")
	}
	if strings.ContainsAny(raw, " \t\r\n\x00\\") {
		return nil, errField(ErrUnsafeURL, "url", "forbidden characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errField(ErrUnsafeURL, "url", "not a URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !p.InsecureAllowHTTPLoopback || !IsLoopbackHost(u.Hostname()) {
			return nil, errField(ErrUnsafeURL, "url", "plain http is allowed only to loopback in development")
		}
	default:
		// Scheme is matched case-sensitively after url.Parse lowercased it;
		// anything else, including javascript:, data:, file:, vbscript:, is
		// refused.
		return nil, errField(ErrUnsafeURL, "url", "scheme must be https")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, errField(ErrUnsafeURL, "url", "not absolute")
	}
	if u.User != nil {
		return nil, errField(ErrUnsafeURL, "url", "user information")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, errField(ErrUnsafeURL, "url", "fragment")
	}
	return u, nil
}

// maxURLLength bounds every URL this package parses.
const maxURLLength = 2048

// IsLoopbackHost reports whether host (without port or brackets) is a
// loopback IP literal (127.0.0.0/8, ::1, or an IPv4-mapped form of them) or
// the name "localhost" (RFC 6761 §6.3).
func IsLoopbackHost(host string) bool {
	if equalFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || addr.Zone() != "" {
		return false
	}
	return addr.Unmap().IsLoopback()
}

// CheckIssuer reports whether issuer is a valid RFC 8414 §2 issuer
// identifier under policy p: a URL acceptable to [URLPolicy.CheckURL] with no
// query and no fragment. The error wraps [ErrInvalidIssuer] (and
// [ErrUnsafeURL] when the URL itself is refused).
func (p URLPolicy) CheckIssuer(issuer string) error {
	u, err := p.parse(issuer)
	if err != nil {
		return errJoin(ErrInvalidIssuer, err)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return errField(ErrInvalidIssuer, "issuer", "query")
	}
	return nil
}

// errJoin returns an error that matches both outer and inner with errors.Is
// and reads as the inner message.
func errJoin(outer, inner error) error { return &joined{outer: outer, inner: inner} }

type joined struct{ outer, inner error }

func (j *joined) Error() string   { return j.inner.Error() }
func (j *joined) Unwrap() []error { return []error{j.outer, j.inner} }
