package dpop

import (
	"cmp"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// maxURLLength bounds the URLs normalizeHTU accepts.
const maxURLLength = 4096

// normalizeHTU returns the form of an HTTP target URI that a DPoP proof's
// "htu" claim carries and that a verifier compares (RFC 9449 §4.2, §4.3):
// the query and fragment removed, then RFC 3986 §6.2.2 syntax-based and
// §6.2.3 scheme-based normalization — scheme and host in lower case, the
// default port (443 for https, 80 for http) removed, percent-encodings of
// unreserved characters decoded and the others in upper case, "." and ".."
// segments removed, and an empty path written as "/". Everything else in
// the path is kept, so "https://h/mcp" and "https://h/mcp/" stay distinct.
//
// raw must be an absolute http or https URI without user information.
func normalizeHTU(raw string) (string, error) {
	if raw == "" || len(raw) > maxURLLength || strings.ContainsAny(raw, " \t\r\n\x00\\") {
		return "", fail(ErrInvalidRequest, "URL is not a URI")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fail(ErrInvalidRequest, "URL is not a URI")
	}
	scheme := ascii.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", fail(ErrInvalidRequest, "URL is not http or https")
	}
	if u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", fail(ErrInvalidRequest, "URL has no host or has user information")
	}
	host, err := normalizeHost(scheme, u)
	if err != nil {
		return "", err
	}
	path := cmp.Or(removeDotSegments(normalizePercent(u.EscapedPath())), "/")
	out := scheme + "://" + host + path
	if len(out) > maxURLLength {
		// Escaping can lengthen a URL; refusing here keeps normalizeHTU
		// idempotent at the bound.
		return "", fail(ErrInvalidRequest, "URL is too long")
	}
	return out, nil
}

var defaultPort = map[string]string{"https": "443", "http": "80"}

func normalizeHost(scheme string, u *url.URL) (string, error) {
	host := ascii.ToLower(u.Hostname())
	if host == "" || !validHost(host, u.Host) {
		return "", fail(ErrInvalidRequest, "URL has an empty or invalid host")
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return "", fail(ErrInvalidRequest, "URL has an invalid port")
		}
		port = strconv.FormatUint(n, 10)
	}
	if port != "" && port != defaultPort[scheme] {
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]", nil
	}
	return host, nil
}

// normalizePercent decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the others (RFC 3986 §6.2.2.1, §6.2.2.2).
// Its input comes from url.URL.EscapedPath, so every '%' starts a valid
// triplet.
func normalizePercent(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if c, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				if isUnreserved(byte(c)) {
					b.WriteByte(byte(c))
				} else {
					b.WriteString("%" + strings.ToUpper(p[i+1:i+3]))
				}
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// removeDotSegments implements RFC 3986 §5.2.4 for an absolute path.
func removeDotSegments(in string) string {
	if !strings.Contains(in, ".") {
		return in
	}
	var out []string
	segs := strings.Split(in, "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	res := strings.Join(out, "/")
	if !strings.HasPrefix(res, "/") && strings.HasPrefix(in, "/") {
		res = "/" + res
	}
	return res
}

// validMethod reports whether m is an RFC 9110 §9.1 method token.
func validMethod(m string) bool {
	return m != "" && len(m) <= 64 && !strings.ContainsFunc(m, func(r rune) bool {
		return r >= 0x80 || !isUnreserved(byte(r)) && !strings.ContainsRune("!#$%&'*+^`|", r)
	})
}

// validHost reports whether host (from authority) is a name of ASCII
// letters, digits, '-', '.' and '_', or a bracketed IPv6 literal. Anything
// else (stray brackets or colons, non-ASCII bytes) could not survive a
// second normalization unchanged.
func validHost(host, authority string) bool {
	if strings.Contains(host, ":") {
		if !strings.HasPrefix(authority, "[") {
			return false
		}
		_, err := netip.ParseAddr(host)
		return err == nil
	}
	return !strings.ContainsFunc(host, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_')
	})
}
