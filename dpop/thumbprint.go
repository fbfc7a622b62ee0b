package dpop

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

// JKT returns the JWK SHA-256 thumbprint of a public key (RFC 7638 §3,
// base64url without padding): the value of "cnf.jkt" in a DPoP-bound access
// token and of "dpop_jkt" in an authorization request (RFC 9449 §6.1, §10).
// pub must be an *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey.
func JKT(pub crypto.PublicKey) (string, error) {
	if _, err := jwa.ForKey(pub); err != nil { // exactly the key types a proof can carry
		return "", err
	}
	jwk := jose.JSONWebKey{Key: pub}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("dpop: thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// accessTokenHash returns the "ath" value for an access token: the base64url
// encoding of the SHA-256 hash of its ASCII bytes (RFC 9449 §4.2).
func accessTokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
