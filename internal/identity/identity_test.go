package identity

import (
	"errors"
	"strings"
	"testing"
)

func TestParseEmail(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	// A domain of 253 octets: four labels of 63 and one of 1.
	domain253 := strings.Repeat(long(63)+".", 3) + long(59) + ".b"
	tests := []struct {
		in, want string // want "" means refused
		domain   string
	}{
		{"alice@example.com", "alice@example.com", "example.com"},
		{"Alice.Smith@Example.COM", "alice.smith@example.com", "example.com"},
		{"a+tag@sub.example.co.uk", "a+tag@sub.example.co.uk", "sub.example.co.uk"},
		{"first_last-x@xn--bcher-kva.example", "first_last-x@xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"a@b.c0", "a@b.c0", "b.c0"},
		{"1@2.example", "1@2.example", "2.example"},
		{long(64) + "@example.com", long(64) + "@example.com", "example.com"},

		// The attacks of CVE-2026-40574 and their relatives.
		{"attacker@evil.com@example.com", "", ""},
		{"a@example.com\x00@evil.com", "", ""},
		{"a@example.com\x00", "", ""},
		{"a%40evil.com@example.com", "", ""},
		{"a%evil.com@example.com", "", ""},
		{"evil.com!a@example.com", "", ""},
		{`"a@b"@example.com`, "", ""},
		{`"a"@example.com`, "", ""},
		{"a @example.com", "", ""},
		{" a@example.com", "", ""},
		{"a@example.com ", "", ""},
		{"a@ example.com", "", ""},
		{"a\t@example.com", "", ""},
		{"a\r\n@example.com", "", ""},
		{"a\x7f@example.com", "", ""},
		{"a(comment)@example.com", "", ""},
		{"<a@example.com>", "", ""},
		{"a@example.com,b@example.com", "", ""},
		{"a\\@example.com", "", ""},
		{"o'brien@example.com", "", ""},
		{"a/b@example.com", "", ""},
		// Unicode: no folding, no confusables.
		{"boſſ@partner.org", "", ""},
		{"x@exаmple.com", "", ""}, // Cyrillic а
		{"\u212Aevin@example.com", "", ""},
		{"x@example.com\u200b", "", ""},
		{"ü@example.com", "", ""},
		{"x@bücher.example", "", ""},
		// Local part shape.
		{"@example.com", "", ""},
		{".a@example.com", "", ""},
		{"a.@example.com", "", ""},
		{"a..b@example.com", "", ""},
		{long(65) + "@example.com", "", ""},
		// Domain shape.
		{"a@", "", ""},
		{"a", "", ""},
		{"", "", ""},
		{"a@localhost", "", ""},
		{"a@example.com.", "", ""},
		{"a@.example.com", "", ""},
		{"a@example..com", "", ""},
		{"a@-example.com", "", ""},
		{"a@example-.com", "", ""},
		{"a@exa_mple.com", "", ""},
		{"a@192.0.2.1", "", ""},
		{"a@[192.0.2.1]", "", ""},
		{"a@[IPv6:::1]", "", ""},
		{"a@" + long(64) + ".com", "", ""},
		{"a@" + domain253 + "x", "", ""},
	}
	for _, tc := range tests {
		e, err := ParseEmail(tc.in)
		if tc.want == "" {
			if err == nil || !errors.Is(err, ErrInvalid) || !e.IsZero() {
				t.Errorf("ParseEmail(%q) = %q, %v; want ErrInvalid", tc.in, e, err)
			}
			continue
		}
		if err != nil || e.String() != tc.want || e.Domain() != tc.domain {
			t.Errorf("ParseEmail(%q) = %q (domain %q), %v; want %q (domain %q)", tc.in, e, e.Domain(), err, tc.want, tc.domain)
		}
	}
	// The length limits are of the whole address and of the domain.
	if _, err := ParseDomain(domain253); err != nil || len(domain253) != 253 {
		t.Errorf("ParseDomain(253 octets): %v", err)
	}
	if _, err := ParseEmail(long(64) + "@" + long(63) + "." + long(63) + "." + long(59) + ".b"); err != nil {
		t.Errorf("ParseEmail(254 octets): %v", err)
	}
	if _, err := ParseEmail(long(64) + "@" + long(63) + "." + long(63) + "." + long(60) + ".b"); err == nil {
		t.Error("ParseEmail(255 octets) accepted")
	}
	if (Email{}).String() != "" || (Email{}).Domain() != "" || !(Email{}).IsZero() {
		t.Error("the zero Email is not empty")
	}
}

func TestParseDomain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"example.com", "example.com"},
		{"EXAMPLE.Com", "example.com"},
		{"a-b.c-d.example", "a-b.c-d.example"},
		{"xn--e1afmkfd.xn--p1ai", "xn--e1afmkfd.xn--p1ai"},
		{"3com.com", "3com.com"},
		{"exаmple.com", ""}, // Cyrillic а
		{"ЕXAMPLE.COM", ""}, // Cyrillic Е
		{"example.com.", ""},
		{"@example.com", ""},
		{"*.example.com", ""},
		{"example", ""},
		{"example.123", ""},
		{"1.2.3.4", ""},
		{"exa mple.com", ""},
		{"example.com\x00", ""},
		{"example%2ecom", ""},
		{"", ""},
		{".", ""},
	}
	for _, tc := range tests {
		got, err := ParseDomain(tc.in)
		if tc.want == "" {
			if !errors.Is(err, ErrInvalid) || got != "" {
				t.Errorf("ParseDomain(%q) = %q, %v; want ErrInvalid", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDomain(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"alice-123", "583231", "mcp-admins", "Équipe Ops", "a b", "CN=Ops,OU=Groups"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", " admins", "admins ", "ad\x00mins", "ad\nmins", "a\u0085b", "\xff", "\u00a0admins", strings.Repeat("a", 1025)} {
		if err := CheckName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// The error says what is wrong without quoting the input, which may be an
// attacker's.
func TestErrorText(t *testing.T) {
	_, err := ParseEmail("attacker@evil.com@example.com")
	if err == nil || strings.Contains(err.Error(), "evil") || !strings.Contains(err.Error(), "more than one @") {
		t.Fatalf("error %v", err)
	}
}
