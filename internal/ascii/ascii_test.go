package ascii

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEqualFold(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"Basic", "basic", true},
		{"BEARER", "Bearer", true},
		{"DPoP", "dpop", true},
		{"", "", true},
		{"a", "", false},
		{"Baſic", "Basic", false},  // U+017F LONG S folds to s in Unicode
		{"\u212Aey", "key", false}, // U+212A KELVIN SIGN folds to k
		{"boſſ@partner.org", "boss@partner.org", false},
		{"ß", "ss", false},
		{"é", "É", false}, // only ASCII letters fold
		{"@", "`", false}, // neighbours of the letter ranges
		{"[", "{", false},
		{"a\x00", "A\x00", true},
	}
	for _, tc := range tests {
		if got := EqualFold(tc.a, tc.b); got != tc.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if !HasPrefixFold("Application/JWT", "application/") || HasPrefixFold("appl", "application/") ||
		HasPrefixFold("applicatioN\u212A", "applicationk") {
		t.Error("HasPrefixFold")
	}
}

func TestToLower(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM": "example.com", "already": "already", "": "",
		"\u212A": "\u212A", "İ": "İ", "ÉCOLE.example": "École.example", "A\x00Z": "a\x00z",
	} {
		if got := ToLower(in); got != want {
			t.Errorf("ToLower(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEqualFold: EqualFold agrees with strings.EqualFold on ASCII input,
// and on any input it is ToLower equality.
func FuzzEqualFold(f *testing.F) {
	f.Add("Basic", "basic")
	f.Add("Baſic", "Basic")
	f.Add("\u212A", "k")
	f.Fuzz(func(t *testing.T, a, b string) {
		got := EqualFold(a, b)
		if got != (ToLower(a) == ToLower(b)) {
			t.Fatalf("EqualFold(%q, %q) = %v, ToLower disagrees", a, b, got)
		}
		if isASCII(a) && isASCII(b) && got != strings.EqualFold(a, b) {
			t.Fatalf("EqualFold(%q, %q) = %v, strings.EqualFold disagrees", a, b, got)
		}
		if got && utf8.ValidString(a) != utf8.ValidString(b) {
			t.Fatalf("EqualFold(%q, %q) matched valid and invalid UTF-8", a, b)
		}
	})
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
}
