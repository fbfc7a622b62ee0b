package identity

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseEmail: parsing never panics, and an accepted address is
// printable ASCII from the accepted character set, with exactly one "@",
// parses again to itself, and has the domain ParseDomain gives for its
// part after the "@".
func FuzzParseEmail(f *testing.F) {
	for _, s := range []string{
		"alice@example.com", "Alice@EXAMPLE.com", "attacker@evil.com@example.com", "a@example.com\x00@evil.com",
		"a%40evil.com@example.com", `"a@b"@example.com`, "a @example.com", "boſſ@partner.org", "x@exаmple.com",
		"a@example.com.", "a@1.2.3.4", "a..b@example.com", "a@xn--bcher-kva.example", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEmail(s)
		if err != nil {
			if !e.IsZero() {
				t.Fatalf("ParseEmail(%q) failed but returned %q", s, e)
			}
			return
		}
		addr := e.String()
		if strings.Count(addr, "@") != 1 || len(addr) != len(s) || len(addr) > maxAddress ||
			strings.ContainsFunc(addr, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_+@", r))
			}) {
			t.Fatalf("ParseEmail(%q) accepted %q", s, addr)
		}
		again, err := ParseEmail(addr)
		if err != nil || again != e {
			t.Fatalf("ParseEmail(%q) = %q, but again %q, %v", s, addr, again, err)
		}
		d, err := ParseDomain(s[strings.IndexByte(s, '@')+1:])
		if err != nil || d != e.Domain() {
			t.Fatalf("ParseEmail(%q): domain %q, ParseDomain %q, %v", s, e.Domain(), d, err)
		}
	})
}

// FuzzCheckName: checking never panics, and an accepted name is
// non-empty UTF-8 without control characters or white space at its ends.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"alice", " a", "a\x00", "\xff", "Équipe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckName(s) != nil {
			return
		}
		if s == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) ||
			strings.TrimSpace(s) != s {
			t.Fatalf("CheckName accepted %q", s)
		}
	})
}
