// Package identity parses the email addresses, domain names and names that
// identify users, strictly and in one place, so that every rule matching
// them (the authorization server's allow-list and grant policy, the
// identity headers of the protect proxy) reads them the same way. Nothing
// is normalised and nothing is folded by Unicode rules.
package identity

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpauth/mcpauth/internal/ascii"
)

// Limits on an address, a domain name and a name.
const (
	maxName    = 1024
	maxAddress = 254 // RFC 5321 §4.5.3.1.3: a 256-octet path less "<" and ">"
	maxLocal   = 64  // RFC 5321 §4.5.3.1.1
	maxDomain  = 253 // RFC 1035 §2.3.4, in text form without a trailing dot
	maxLabel   = 63  // RFC 1035 §2.3.4
)

// ErrInvalid is the error of every refused address or domain name; the
// message that wraps it says what is wrong, without quoting the input.
var ErrInvalid = errors.New("not an accepted email address or domain name")

func invalid(why string) error { return &parseError{why} }

type parseError struct{ why string }

func (e *parseError) Error() string { return e.why }
func (e *parseError) Unwrap() error { return ErrInvalid }

// Email is a parsed email address. Its zero value is no address.
type Email struct {
	addr string // lower-cased
	at   int    // index of the "@" in addr
}

// ParseEmail parses s as an email address. It accepts only a conservative
// subset of the RFC 5322 §3.4.1 addr-spec "local@domain", in which
//
//   - the whole address is at most 254 octets (RFC 5321 §4.5.3.1.3, less
//     the angle brackets of a path), and has exactly one "@";
//   - the local part is a dot-atom (RFC 5322 §3.2.3) of 1 to 64 octets
//     (RFC 5321 §4.5.3.1.1) whose atoms use only the ASCII letters, digits,
//     "_", "+" and "-": no quoted string ("a@b"@example.com), no comment, no
//     space, control character or NUL, and none of the other atext
//     characters such as "%" and "!" (the percent and bang source-route
//     forms, in which a%evil.example@example.com may be relayed to
//     a@evil.example), or "'", "/", "=", "?" and "`", which are rare in
//     identity addresses and unsafe where an address ends up in a header,
//     a log or a shell;
//   - the domain is a domain name by [ParseDomain].
//
// Anything else is refused, never rewritten: a string that needs
// normalising is not an address that can be trusted to mean one mailbox.
// An address outside this subset may still be a real mailbox; its owner
// can be matched by their provider's user identifier instead.
//
// The error matches [ErrInvalid].
func ParseEmail(s string) (Email, error) {
	if len(s) > maxAddress {
		return Email{}, invalid("email address longer than 254 octets")
	}
	at := strings.IndexByte(s, '@')
	switch {
	case at < 0:
		return Email{}, invalid("email address without @")
	case strings.IndexByte(s[at+1:], '@') >= 0:
		return Email{}, invalid("email address with more than one @")
	}
	if err := checkLocal(s[:at]); err != nil {
		return Email{}, err
	}
	domain, err := ParseDomain(s[at+1:])
	if err != nil {
		return Email{}, err
	}
	return Email{addr: ascii.ToLower(s[:at]) + "@" + domain, at: at}, nil
}

// String returns the address with the ASCII letters of both parts
// lower-cased, the form in which two addresses are compared ("" for the
// zero Email). Domain names are case-insensitive (RFC 4343); RFC 5321 §2.4
// lets a server treat a local part's case as significant, but the identity
// providers whose verified addresses are matched here treat "Alice" and
// "alice" as one mailbox. As both parts are ASCII, no Unicode case folding
// or normalisation is ever applied: "boſſ@example.com" (U+017F) is no
// address, and certainly not "boss@example.com".
func (e Email) String() string { return e.addr }

// Domain returns the domain, lower-cased; "" for the zero Email.
func (e Email) Domain() string {
	if e.addr == "" {
		return ""
	}
	return e.addr[e.at+1:]
}

// IsZero reports whether e is no address.
func (e Email) IsZero() bool { return e.addr == "" }

// checkLocal checks a local part: a dot-atom of letters, digits, "_", "+"
// and "-".
func checkLocal(s string) error {
	switch {
	case s == "":
		return invalid("email address with an empty local part")
	case len(s) > maxLocal:
		return invalid("email local part longer than 64 octets")
	case s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, ".."):
		return invalid("email local part with a leading, trailing or double dot")
	}
	for i := range len(s) {
		if c := s[i]; !isLetterDigit(c) && c != '.' && c != '_' && c != '+' && c != '-' {
			return invalid("email local part with a character other than letters, digits and . _ + -")
		}
	}
	return nil
}

// ParseDomain parses s as a domain name and returns it lower-cased. A
// domain name has at least two labels separated by dots, at most 253
// octets in all, and no trailing dot (an address's domain never has one,
// and a rule "example.com." must not silently differ from "example.com");
// each label has 1 to 63 ASCII letters, digits and hyphens, neither first
// nor last a hyphen (RFC 1035 §2.3.1, RFC 1123 §2.1), and the last label
// is not all digits, so that no IPv4 address passes for a name (RFC 3696
// §2). An internationalised name is accepted in its A-label form
// ("xn--…", RFC 5890) only; an address literal ("[192.0.2.1]") is
// refused. The error matches [ErrInvalid].
func ParseDomain(s string) (string, error) {
	switch {
	case s == "":
		return "", invalid("empty domain name")
	case len(s) > maxDomain:
		return "", invalid("domain name longer than 253 octets")
	case s[len(s)-1] == '.':
		return "", invalid("domain name with a trailing dot")
	}
	labels, last := 0, ""
	for label := range strings.SplitSeq(s, ".") {
		if err := checkLabel(label); err != nil {
			return "", err
		}
		labels, last = labels+1, label
	}
	switch {
	case labels < 2:
		return "", invalid("domain name of a single label")
	case strings.Trim(last, "0123456789") == "":
		return "", invalid("domain name whose last label is all digits")
	}
	return ascii.ToLower(s), nil
}

// checkLabel checks one label of a domain name.
func checkLabel(l string) error {
	switch {
	case l == "":
		return invalid("domain name with an empty label")
	case len(l) > maxLabel:
		return invalid("domain name with a label longer than 63 octets")
	case l[0] == '-' || l[len(l)-1] == '-':
		return invalid("domain name with a label that begins or ends with a hyphen")
	}
	for i := range len(l) {
		if c := l[i]; !isLetterDigit(c) && c != '-' {
			return invalid("domain name with a character other than ASCII letters, digits and hyphens")
		}
	}
	return nil
}

func isLetterDigit(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// CheckName checks s as a name a rule matches exactly, byte for byte: a
// user identifier (OpenID Connect "sub", at most 255 ASCII characters by
// its §2, or a provider's numeric id) or a group name. Such names are
// case-sensitive and are never case-folded or normalised, so the check
// only refuses what cannot be meant as a name: the empty string, more
// than 1024 octets, invalid UTF-8, control characters, and white space at
// either end (a rule " admins" never matches "admins"). The error matches
// [ErrInvalid].
func CheckName(s string) error {
	switch {
	case s == "":
		return invalid("empty name")
	case len(s) > maxName:
		return invalid("name longer than 1024 octets")
	case !utf8.ValidString(s):
		return invalid("name that is not UTF-8")
	case strings.ContainsFunc(s, unicode.IsControl):
		return invalid("name with a control character")
	case strings.TrimFunc(s, unicode.IsSpace) != s:
		return invalid("name with white space at either end")
	}
	return nil
}

// Subject is the subject an authorization server gives the user sub of
// the identity provider issuer: "u-" followed by the unpadded base64url
// SHA-256 of the issuer, a zero byte and sub. It is stable for as long as
// the provider's issuer identifier and its sub for the user are, distinct
// for different providers, and reveals neither.
func Subject(issuer, sub string) string {
	h := sha256.New()
	h.Write([]byte(issuer))
	h.Write([]byte{0})
	h.Write([]byte(sub))
	return "u-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
