package pkce

import (
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// RFC 7636 Appendix B.
const (
	rfcVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

// TestChallengeRFC7636AppendixB covers requirement CL-09 with the RFC's own
// test vector.
func TestChallengeRFC7636AppendixB(t *testing.T) {
	t.Parallel()
	if got := Challenge(rfcVerifier); got != rfcChallenge {
		t.Fatalf("CL-09 Challenge = %q, want %q", got, rfcChallenge)
	}
	if !Verify(rfcVerifier, rfcChallenge) {
		t.Fatal("Verify rejected the RFC 7636 vector")
	}
}

// TestChallengeMatchesXOAuth2 proves Challenge agrees with x/oauth2, which
// the client uses to build authorization URLs.
func TestChallengeMatchesXOAuth2(t *testing.T) {
	t.Parallel()
	for range 100 {
		v := GenerateVerifier()
		if got, want := Challenge(v), oauth2.S256ChallengeFromVerifier(v); got != want {
			t.Fatalf("Challenge(%q) = %q, x/oauth2 = %q", v, got, want)
		}
	}
}

func TestGenerateVerifier(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		v := GenerateVerifier()
		if len(v) != 43 || !ValidVerifier(v) {
			t.Fatalf("CL-09 GenerateVerifier() = %q: not a valid 43-character verifier", v)
		}
		if seen[v] {
			t.Fatalf("GenerateVerifier repeated %q", v)
		}
		seen[v] = true
		if !ValidChallenge(Challenge(v)) {
			t.Fatalf("Challenge(%q) is not a valid challenge", v)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 128)
	tests := []struct {
		name                string
		verifier, challenge string
		want                bool
	}{
		{"rfc vector", rfcVerifier, rfcChallenge, true},
		{"128 characters", long, Challenge(long), true},
		{"wrong verifier", GenerateVerifier(), rfcChallenge, false},
		{"plain method attempt: challenge equals verifier", rfcVerifier, rfcVerifier, false},
		{"empty challenge (downgrade)", rfcVerifier, "", false},
		{"empty verifier", "", rfcChallenge, false},
		{"42 characters", rfcVerifier[:42], Challenge(rfcVerifier[:42]), false},
		{"129 characters", long + "a", Challenge(long + "a"), false},
		{"reserved character", rfcVerifier[:42] + "+", Challenge(rfcVerifier[:42] + "+"), false},
		{"padded challenge", rfcVerifier, rfcChallenge + "=", false},
		{"challenge with non-canonical last char", rfcVerifier, rfcChallenge[:42] + "N", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Verify(tt.verifier, tt.challenge); got != tt.want {
				t.Fatalf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzVerifier checks the syntax check and Verify never panic, that Verify
// only accepts syntactically valid verifiers, and that any valid verifier
// verifies against its own challenge.
func FuzzVerifier(f *testing.F) {
	f.Add(rfcVerifier, rfcChallenge)
	f.Add(strings.Repeat("~", 43), "")
	f.Fuzz(func(t *testing.T, verifier, challenge string) {
		ok := Verify(verifier, challenge)
		if ok && !ValidVerifier(verifier) {
			t.Fatalf("Verify accepted invalid verifier %q", verifier)
		}
		if ValidVerifier(verifier) && !Verify(verifier, Challenge(verifier)) {
			t.Fatalf("valid verifier %q does not verify against its challenge", verifier)
		}
	})
}

// TestValidChallengeShape: a challenge is exactly the unpadded base64url
// encoding of 32 bytes. The decoder behind the check skips CR and LF, so
// those are refused by the decoded length; a last character with non-zero
// spare bits, padding, the standard alphabet and non-ASCII bytes are
// refused; x/oauth2's challenges (the Go SDK's) pass.
func TestValidChallengeShape(t *testing.T) {
	t.Parallel()
	const zeroSpareBits = "AEIMQUYcgkosw048"
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		ch := rfcChallenge[:42] + string(c)
		if got, want := ValidChallenge(ch), strings.ContainsRune(zeroSpareBits, c); got != want {
			t.Errorf("ValidChallenge(%q) = %v, want %v", ch, got, want)
		}
	}
	for _, ch := range []string{
		"", rfcChallenge[:42], rfcChallenge + "A", rfcChallenge + "=",
		rfcChallenge[:42] + "\n", rfcChallenge[:42] + "\r", rfcChallenge[:20] + "\n" + rfcChallenge[21:],
		rfcChallenge[:20] + "\r\n" + rfcChallenge[22:], rfcChallenge[:20] + "+" + rfcChallenge[21:],
		rfcChallenge[:20] + "/" + rfcChallenge[21:], rfcChallenge[:20] + "." + rfcChallenge[21:],
		rfcChallenge[:41] + "é", rfcChallenge[:42] + "\xff", rfcChallenge[:42] + "\x00",
	} {
		if ValidChallenge(ch) {
			t.Errorf("ValidChallenge(%q) = true", ch)
		}
	}
	for range 100 {
		if ch := oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier()); !ValidChallenge(ch) {
			t.Fatalf("x/oauth2 challenge %q refused", ch)
		}
	}
}
