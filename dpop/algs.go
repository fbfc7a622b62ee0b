package dpop

import (
	"crypto"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwkset"
)

// DefaultAlgorithms returns the proof algorithms accepted where a
// configuration names none: every asymmetric algorithm go-jose verifies
// (ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512 and
// EdDSA), which covers every key a [Prover] picks an algorithm for. It is
// the one default list of the module's DPoP verifiers (the resource
// server's and the authorization server's) and of the client's choice.
func DefaultAlgorithms() []string {
	return []string{jwkset.ES256, jwkset.ES384, jwkset.ES512,
		jwkset.RS256, jwkset.RS384, jwkset.RS512,
		jwkset.PS256, jwkset.PS384, jwkset.PS512, jwkset.EdDSA}
}

// checkAlgorithms validates an allowlist (empty means [DefaultAlgorithms])
// and returns it with its go-jose form.
func checkAlgorithms(algs []string) ([]string, []jose.SignatureAlgorithm, error) {
	names, err := jwkset.Allowlist(algs, DefaultAlgorithms())
	if err != nil {
		return nil, nil, fmt.Errorf("dpop: %w", err)
	}
	return names, jwkset.JOSE(names), nil
}

// checkKeyAlg reports whether pub is a key alg can be used with, as this
// package's sentinels: errInvalidJWK for a weak or unsupported key,
// errAlgKeyMismatch when key and alg do not belong together.
func checkKeyAlg(pub crypto.PublicKey, alg string) error {
	switch err := jwkset.CheckKey(pub, alg); {
	case err == nil:
		return nil
	case errors.Is(err, jwkset.ErrKeyMismatch):
		return errAlgKeyMismatch
	default:
		return errInvalidJWK
	}
}
