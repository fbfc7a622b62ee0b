package dpop

import (
	"strconv"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// decodeClaims decodes a proof payload into w with exactly the result (and
// the same acceptance) of jsonx.DecodeObject. The payloads clients send take
// a single pass without reflection: an object whose members are only the
// six claims of RFC 9449 §4.2, each at most once, with string values of
// printable ASCII without escapes and a plain decimal "iat". Anything else
// (an unknown or repeated member, an escape, a non-ASCII byte, null, an
// exponent, a syntax error) is decoded again by jsonx, which is the one
// arbiter of what is accepted; the fast path only ever accepts what jsonx
// accepts, and yields the same values (FuzzDecodeClaims compares the two).
func decodeClaims(payload []byte, w *wireClaims) error {
	if fastDecodeClaims(payload, w) {
		return nil
	}
	var slow wireClaims // declared here so that only this path allocates it
	err := jsonx.DecodeObject(payload, &slow)
	*w = slow
	if w.IAT != nil {
		w.iat, w.hasIAT = *w.IAT, true
	}
	return err
}

// claims scanner states: the bit of each claim in the "seen" mask.
const (
	seenJTI = 1 << iota
	seenHTM
	seenHTU
	seenIAT
	seenATH
	seenNonce
)

// fastDecodeClaims is the single-pass decoder of decodeClaims; it reports
// false, leaving w in any state, when the payload is not of the simple shape.
// The strings it stores share one copy of the payload.
func fastDecodeClaims(payload []byte, w *wireClaims) bool {
	s := string(payload)
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = skipWS(s, i+1)
	seen := 0
	for first := true; ; first = false {
		if i < len(s) && s[i] == '}' && first {
			break
		}
		name, j, ok := plainString(s, i)
		if !ok {
			return false
		}
		if j = skipWS(s, j); j >= len(s) || s[j] != ':' {
			return false
		}
		j = skipWS(s, j+1)
		bit, val, end, ok := claimValue(s, name, j)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !storeClaim(w, bit, val) {
			return false
		}
		if i = skipWS(s, end); i < len(s) && s[i] == ',' {
			i = skipWS(s, i+1)
			continue
		}
		if i < len(s) && s[i] == '}' {
			break
		}
		return false
	}
	return skipWS(s, i+1) == len(s)
}

// claimValue reads the value of member name starting at s[i]: a plain string
// for the string claims, a plain decimal for "iat". It returns the claim's
// bit, the value's text (without quotes) and the index after it.
func claimValue(s, name string, i int) (bit int, val string, end int, ok bool) {
	switch name {
	case "jti":
		bit = seenJTI
	case "htm":
		bit = seenHTM
	case "htu":
		bit = seenHTU
	case "ath":
		bit = seenATH
	case "nonce":
		bit = seenNonce
	case "iat":
		val, end, ok = plainDecimal(s, i)
		return seenIAT, val, end, ok
	default:
		return 0, "", 0, false
	}
	val, end, ok = plainString(s, i)
	return bit, val, end, ok
}

func storeClaim(w *wireClaims, bit int, val string) bool {
	switch bit {
	case seenJTI:
		w.JTI = val
	case seenHTM:
		w.HTM = val
	case seenHTU:
		w.HTU = val
	case seenATH:
		w.ATH = val
	case seenNonce:
		w.Nonce = val
	case seenIAT:
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return false
		}
		w.iat, w.hasIAT = f, true
	}
	return true
}

// plainString reads a JSON string at s[i] made only of printable ASCII
// other than '"' and '\' and returns its contents and the index after it.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}

// plainDecimal reads a JSON number at s[i] of the form 0 or [1-9][0-9]*,
// optionally followed by '.' and one or more digits (no sign, no exponent),
// at most 32 bytes long.
func plainDecimal(s string, i int) (string, int, bool) {
	j := digits(s, i)
	if j == i || (s[i] == '0' && j > i+1) {
		return "", 0, false
	}
	if j < len(s) && s[j] == '.' {
		k := digits(s, j+1)
		if k == j+1 {
			return "", 0, false
		}
		j = k
	}
	if j-i > 32 {
		return "", 0, false
	}
	return s[i:j], j, true
}

func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// skipWS skips JSON whitespace (RFC 8259 §2) from s[i].
func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
