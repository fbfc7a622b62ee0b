package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// JWS algorithm names (RFC 7518 §3.1, RFC 8037 §3.1) a DPoP proof may use.
// Only asymmetric algorithms exist here: RFC 9449 §4.2 forbids "none" and
// MAC-based algorithms.
const (
	ES256 = "ES256"
	ES384 = "ES384"
	ES512 = "ES512"
	RS256 = "RS256"
	RS384 = "RS384"
	RS512 = "RS512"
	PS256 = "PS256"
	PS384 = "PS384"
	PS512 = "PS512"
	EdDSA = "EdDSA"
)

// minRSABits is the smallest RSA modulus accepted for signing or verifying
// (RFC 7518 §3.3: 2048 bits or larger MUST be used).
const minRSABits = 2048

// supportedAlg reports whether alg is one of the asymmetric algorithms above.
func supportedAlg(alg string) bool {
	switch alg {
	case ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA:
		return true
	}
	return false
}

// checkAlgorithms validates an allowlist and returns it as go-jose values.
func checkAlgorithms(algs []string) ([]jose.SignatureAlgorithm, error) {
	out := make([]jose.SignatureAlgorithm, 0, len(algs))
	for _, a := range algs {
		if !supportedAlg(a) {
			return nil, fmt.Errorf("dpop: algorithm %q is not an asymmetric JWS algorithm this package supports", a)
		}
		if !slices.Contains(out, jose.SignatureAlgorithm(a)) {
			out = append(out, jose.SignatureAlgorithm(a))
		}
	}
	return out, nil
}

// checkKeyAlg reports whether pub is a key alg can be used with: the curve
// for ES*, an RSA key of at least 2048 bits for RS* and PS*, Ed25519 for
// EdDSA. It returns ErrInvalidJWK for a weak or unsupported key and
// ErrAlgKeyMismatch when key and alg do not belong together.
func checkKeyAlg(pub crypto.PublicKey, alg string) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if want := curveFor(alg); want == nil || k.Curve != want {
			return ErrAlgKeyMismatch
		}
	case *rsa.PublicKey:
		switch alg {
		case RS256, RS384, RS512, PS256, PS384, PS512:
		default:
			return ErrAlgKeyMismatch
		}
		if k.N == nil || k.N.BitLen() < minRSABits {
			return ErrInvalidJWK
		}
	case ed25519.PublicKey:
		if alg != EdDSA {
			return ErrAlgKeyMismatch
		}
		if len(k) != ed25519.PublicKeySize {
			return ErrInvalidJWK
		}
	default:
		return ErrInvalidJWK
	}
	return nil
}

// curveFor returns the curve an ES* algorithm is defined for, nil otherwise.
func curveFor(alg string) elliptic.Curve {
	switch alg {
	case ES256:
		return elliptic.P256()
	case ES384:
		return elliptic.P384()
	case ES512:
		return elliptic.P521()
	}
	return nil
}

// defaultAlg is the algorithm a Prover uses for a key when none is
// configured: ES256/ES384/ES512 by curve, RS256 for RSA, EdDSA for Ed25519.
func defaultAlg(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ES256, nil
		case elliptic.P384():
			return ES384, nil
		case elliptic.P521():
			return ES512, nil
		}
	case *rsa.PublicKey:
		return RS256, nil
	case ed25519.PublicKey:
		return EdDSA, nil
	}
	return "", fmt.Errorf("dpop: unsupported key type %T", pub)
}
