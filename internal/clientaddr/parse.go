package clientaddr

import (
	"net/netip"
	"strings"
)

// lastElement splits s before its last list element: the element after
// the last comma (outside quoted strings when quoted is set, for
// Forwarded), what precedes that comma, and whether there was a comma. It
// looks at no more than MaxElementBytes+1 bytes from the end; ok is false
// when the element is longer.
//
// Read from the right, a well-formed suffix of a list splits exactly as it
// would from the left: the closing quote of a quoted string is a quote
// preceded by an even number of backslashes, and the bytes to the left of
// the suffix never change how it splits.
func lastElement(s string, quoted bool) (elem, rest string, more, ok bool) {
	lo := max(0, len(s)-MaxElementBytes-1)
	inQuote := false
	for i := len(s) - 1; i >= lo; i-- {
		switch c := s[i]; {
		case c == ',' && !inQuote:
			return s[i+1:], s[:i], true, true
		case c == '"' && quoted:
			n := 0
			for j := i - 1; j >= lo && s[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				inQuote = !inQuote
			}
			i -= n // the backslashes are content of the quoted string
		}
	}
	if lo > 0 {
		return "", "", false, false
	}
	return s, "", false, true
}

// trimOWS removes the optional whitespace (SP, HTAB) around a list
// element.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

// forwardedFor returns the value of the "for" parameter of one
// forwarded-element (RFC 7239 §4):
//
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair    = token "=" value
//	value             = token / quoted-string
//
// with no whitespace inside the element. Parameter names are compared
// ASCII case-insensitively; a registered parameter (for, by, host, proto)
// named twice, a missing "for", or any syntax error is refused.
func forwardedFor(elem string) (string, bool) {
	var forValue string
	var seen uint8
	for elem != "" {
		if elem[0] == ';' {
			elem = elem[1:]
			continue
		}
		n := tokenLen(elem)
		if n == 0 || n == len(elem) || elem[n] != '=' {
			return "", false
		}
		name := elem[:n]
		elem = elem[n+1:]
		var value string
		if elem != "" && elem[0] == '"' {
			var ok bool
			if value, elem, ok = quotedString(elem); !ok {
				return "", false
			}
		} else {
			n := tokenLen(elem)
			if n == 0 {
				return "", false
			}
			value, elem = elem[:n], elem[n:]
		}
		if elem != "" && elem[0] != ';' {
			return "", false
		}
		bit := registeredParam(name)
		if seen&bit != 0 {
			return "", false
		}
		seen |= bit
		if bit == paramFor {
			forValue = value
		}
	}
	return forValue, seen&paramFor != 0
}

// The registered parameters of RFC 7239 §5, as bits.
const (
	paramFor uint8 = 1 << iota
	paramBy
	paramHost
	paramProto
)

func registeredParam(name string) uint8 {
	switch {
	case strings.EqualFold(name, "for"):
		return paramFor
	case strings.EqualFold(name, "by"):
		return paramBy
	case strings.EqualFold(name, "host"):
		return paramHost
	case strings.EqualFold(name, "proto"):
		return paramProto
	}
	return 0
}

// quotedString reads the quoted-string (RFC 9110 §5.6.4) at the start of
// s and returns its content, unescaped, and what follows it.
func quotedString(s string) (value, rest string, ok bool) {
	escaped := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if !escaped {
				return s[1:i], s[i+1:], true
			}
			return unescape(s[1:i]), s[i+1:], true
		case c == '\\':
			if i+1 == len(s) || !quotable(s[i+1]) {
				return "", "", false
			}
			escaped = true
			i++
		case !qdtext(c):
			return "", "", false
		}
	}
	return "", "", false // unterminated
}

// unescape removes the backslashes of the quoted-pairs of a validated
// quoted string's content.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// qdtext: HTAB, SP, and the visible characters except '"' and '\'
// (obs-text is refused).
func qdtext(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || c >= 0x23 && c <= 0x5b || c >= 0x5d && c <= 0x7e
}

// quotable: what may follow '\' in a quoted-pair (obs-text refused).
func quotable(c byte) bool {
	return c == '\t' || c >= 0x20 && c <= 0x7e
}

// tokenLen is the length of the token (RFC 9110 §5.6.2) at the start of s.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		if !tchar(s[i]) {
			return i
		}
	}
	return len(s)
}

func tchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// parseNode parses one hop's address: an IPv4 address or a bracketed IPv6
// address, either optionally followed by ":port", and in X-Forwarded-For
// (forwarded false) also a bare IPv6 address. In Forwarded (RFC 7239 §6)
// the port may be obfuscated ("_" and letters, digits, ".", "_", "-");
// the node names "unknown" and "_…" (obfuscated) are not addresses and are
// refused, as are zones. IPv4-mapped addresses are unmapped.
func parseNode(s string, forwarded bool) (netip.Addr, bool) {
	var host, port string
	hasPort := false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host, port = s[1:end], s[end+1:]
		if port != "" {
			if port[0] != ':' {
				return netip.Addr{}, false
			}
			port, hasPort = port[1:], true
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" || hasPort && !validPort(port, forwarded) {
			return netip.Addr{}, false
		}
		return a.Unmap(), true
	}
	host = s
	if i := strings.IndexByte(s, ':'); i >= 0 {
		if !forwarded && strings.IndexByte(s[i+1:], ':') >= 0 {
			a, err := netip.ParseAddr(s) // a bare IPv6 address
			if err != nil || !a.Is6() || a.Zone() != "" {
				return netip.Addr{}, false
			}
			return a.Unmap(), true
		}
		host, port, hasPort = s[:i], s[i+1:], true
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() || hasPort && !validPort(port, forwarded) {
		return netip.Addr{}, false
	}
	return a, true
}

// validPort: 1 to 5 digits up to 65535, or in Forwarded an obfuscated
// port (RFC 7239 §6.3).
func validPort(p string, forwarded bool) bool {
	if forwarded && len(p) > 1 && p[0] == '_' {
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}
