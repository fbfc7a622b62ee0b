package authserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// randomToken returns n random bytes, base64url-encoded: the codes,
// refresh tokens, client secrets, record IDs, CSRF tokens and cookie
// values this server mints.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokenKey is the stored form of a random token (a code, refresh token,
// CSRF token, state or cookie value): base64url SHA-256, so a store holds
// nothing that can be presented.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
