package dpop

import (
	"crypto"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtassert/jwa"
)

// JWS algorithm names (RFC 7518 §3.1, RFC 8037 §3.1) a DPoP proof may use.
// Only asymmetric algorithms exist here: RFC 9449 §4.2 forbids "none" and
// MAC-based algorithms. The rules behind them live in package jwa.
const (
	ES256 = jwa.ES256
	ES384 = jwa.ES384
	ES512 = jwa.ES512
	RS256 = jwa.RS256
	RS384 = jwa.RS384
	RS512 = jwa.RS512
	PS256 = jwa.PS256
	PS384 = jwa.PS384
	PS512 = jwa.PS512
	EdDSA = jwa.EdDSA
)

// checkAlgorithms validates an allowlist (empty means ES256) and returns it
// with its go-jose form.
func checkAlgorithms(algs []string) ([]string, []jose.SignatureAlgorithm, error) {
	names, err := jwa.Allowlist(algs, []string{ES256})
	if err != nil {
		return nil, nil, fmt.Errorf("dpop: %w", err)
	}
	out := make([]jose.SignatureAlgorithm, len(names))
	for i, a := range names {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return names, out, nil
}

// checkKeyAlg reports whether pub is a key alg can be used with, as this
// package's sentinels: ErrInvalidJWK for a weak or unsupported key,
// ErrAlgKeyMismatch when key and alg do not belong together.
func checkKeyAlg(pub crypto.PublicKey, alg string) error {
	switch err := jwa.CheckKey(pub, alg); {
	case err == nil:
		return nil
	case errors.Is(err, jwa.ErrKeyMismatch):
		return ErrAlgKeyMismatch
	default:
		return ErrInvalidJWK
	}
}
