package oauthmeta

import (
	"strings"
	"unicode/utf8"
)

// equalFold reports whether the protocol tokens a and b (auth schemes,
// parameter names, host names) are equal with the ASCII letters A–Z taken
// as a–z. Both must be ASCII: strings.EqualFold alone would also match
// "ſ" (U+017F) to "s" and the Kelvin sign (U+212A) to "k", while on ASCII
// strings it folds nothing but A–Z.
func equalFold(a, b string) bool {
	return isASCII(a) && isASCII(b) && strings.EqualFold(a, b)
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
