package pkce

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// Method is the code_challenge_method value for the only supported method.
const Method = "S256"

// Verifier length bounds from RFC 7636 §4.1.
const (
	MinVerifierLength = 43
	MaxVerifierLength = 128
)

// GenerateVerifier returns a fresh code verifier: 32 bytes from crypto/rand,
// base64url-encoded without padding (43 characters), as RFC 7636 §4.1
// recommends. Use a new verifier for every authorization
// request. It panics only if the operating system's random source fails,
// which crypto/rand treats as fatal.
func GenerateVerifier() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go 1.24+).
	return base64.RawURLEncoding.EncodeToString(b)
}

// Challenge returns the S256 code challenge of verifier:
// BASE64URL(SHA256(ASCII(verifier))) without padding (RFC 7636 §4.2).
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Verify reports whether verifier is syntactically valid (see
// [ValidVerifier]) and its S256 challenge equals challenge, comparing in
// constant time (RFC 7636 §4.6). An empty challenge never verifies, so a
// verifier sent for a code issued without a challenge is refused (PKCE
// downgrade, RFC 9700 §4.8).
func Verify(verifier, challenge string) bool {
	if !ValidVerifier(verifier) || !ValidChallenge(challenge) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(Challenge(verifier)), []byte(challenge)) == 1
}

// ValidVerifier reports whether v has 43 to 128 characters, each unreserved
// ([A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"), as RFC 7636 §4.1 requires.
func ValidVerifier(v string) bool {
	return len(v) >= MinVerifierLength && len(v) <= MaxVerifierLength && strings.Trim(v, unreservedChars) == ""
}

// unreservedChars are the RFC 3986 §2.3 unreserved characters.
const unreservedChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"

// ValidChallenge reports whether c has the shape of an S256 challenge: 43
// base64url characters without padding, the encoding of 32 bytes (so the
// last character's two spare bits are zero).
func ValidChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c) // Strict: spare bits zero
	return err == nil && len(b) == sha256.Size               // a CR or LF, ignored by the decoder, makes it shorter
}
