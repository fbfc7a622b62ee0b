// Package ascii compares and lower-cases strings by ASCII rules only.
//
// strings.EqualFold and strings.ToLower apply Unicode case rules, under
// which non-ASCII letters match ASCII ones: "ſ" (U+017F) folds to "s" and
// the Kelvin sign "K" (U+212A) to "k", so strings.EqualFold("baſic",
// "basic") is true and strings.ToLower("\u212A") is "k". Protocol tokens
// (auth schemes, token types, URL schemes, host names) and the identity
// strings matched against configured rules are ASCII, and are compared
// here so that no other character ever matches one of their letters.
package ascii

// EqualFold reports whether a and b are equal when the ASCII letters A–Z
// are taken as a–z. Every other byte, non-ASCII bytes included, must be
// the same in both.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// HasPrefixFold reports whether s begins with prefix, by the rule of
// [EqualFold].
func HasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && EqualFold(s[:len(prefix)], prefix)
}

// ToLower returns s with the ASCII letters A–Z replaced by a–z; every
// other byte is left as it is.
func ToLower(s string) string {
	for i := range len(s) {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lower(b[j])
			}
			return string(b)
		}
	}
	return s
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
