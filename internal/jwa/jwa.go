package jwa

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
)

// Asymmetric JWS algorithm names.
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

// MinRSABits is the smallest RSA modulus accepted (RFC 7518 §3.3).
const MinRSABits = 2048

// Errors returned by [CheckKey] and [Allowlist].
var (
	// ErrKeyMismatch: the key type does not fit the algorithm (ES256 with an
	// RSA key, ES256 with a P-384 key, ...).
	ErrKeyMismatch = errors.New("jwa: algorithm does not match the key type")
	// ErrUnsupportedKey: not an ECDSA (P-256/384/521), RSA (2048 bits or
	// more) or Ed25519 public key.
	ErrUnsupportedKey = errors.New("jwa: unsupported or weak key")
	// ErrUnsupportedAlg: not one of the asymmetric algorithms above.
	ErrUnsupportedAlg = errors.New("jwa: unsupported algorithm")
)

// Supported reports whether alg is one of the asymmetric algorithms above.
func Supported(alg string) bool {
	switch alg {
	case ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA:
		return true
	}
	return false
}

// Allowlist validates a configured algorithm list: every member supported,
// duplicates dropped, order kept. An empty list yields def (copied).
func Allowlist(algs, def []string) ([]string, error) {
	if len(algs) == 0 {
		algs = def
	}
	out := make([]string, 0, len(algs))
	for _, a := range algs {
		if !Supported(a) {
			return nil, fmt.Errorf("%w: %q (only asymmetric JWS algorithms are allowed)", ErrUnsupportedAlg, a)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// JOSE returns algs, a list checked by [Allowlist], in a JOSE library's
// type for algorithm names (go-jose's jose.SignatureAlgorithm), for the
// allowlist of its parse functions. It is generic so that this package
// links no JOSE library.
func JOSE[T ~string](algs []string) []T {
	out := make([]T, len(algs))
	for i, a := range algs {
		out[i] = T(a)
	}
	return out
}

// Curve returns the curve an ES* algorithm is defined for, nil otherwise.
func Curve(alg string) elliptic.Curve {
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

// CheckKey reports whether pub can be used with alg: the right curve for
// ES*, an RSA key of at least MinRSABits for RS* and PS*, an Ed25519 key for
// EdDSA. It returns ErrUnsupportedKey for a weak or unknown key and
// ErrKeyMismatch when key and algorithm do not belong together.
func CheckKey(pub crypto.PublicKey, alg string) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return ErrUnsupportedKey
		}
		if want := Curve(alg); want == nil || k.Curve != want {
			return ErrKeyMismatch
		}
	case *rsa.PublicKey:
		if k == nil || k.N == nil || k.N.BitLen() < MinRSABits {
			return ErrUnsupportedKey
		}
		switch alg {
		case RS256, RS384, RS512, PS256, PS384, PS512:
		default:
			return ErrKeyMismatch
		}
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return ErrUnsupportedKey
		}
		if alg != EdDSA {
			return ErrKeyMismatch
		}
	default:
		return ErrUnsupportedKey
	}
	return nil
}

// ForKey returns the algorithm a key signs with when none is configured:
// ES256, ES384 or ES512 by curve, RS256 for RSA, EdDSA for Ed25519.
func ForKey(pub crypto.PublicKey) (string, error) {
	var alg string
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k != nil {
			switch k.Curve {
			case elliptic.P256():
				alg = ES256
			case elliptic.P384():
				alg = ES384
			case elliptic.P521():
				alg = ES512
			}
		}
	case *rsa.PublicKey:
		alg = RS256
	case ed25519.PublicKey:
		alg = EdDSA
	}
	if alg == "" {
		return "", fmt.Errorf("%w: %T", ErrUnsupportedKey, pub)
	}
	if err := CheckKey(pub, alg); err != nil {
		return "", err
	}
	return alg, nil
}

// GenerateKey returns a new private key of the type alg needs: the curve
// of an ES* algorithm, Ed25519 for EdDSA, RSA of MinRSABits for RS* and
// PS*. Errors wrap ErrUnsupportedAlg for any other alg.
func GenerateKey(alg string) (crypto.Signer, error) {
	var key crypto.Signer
	var err error
	switch {
	case Curve(alg) != nil:
		key, err = ecdsa.GenerateKey(Curve(alg), rand.Reader)
	case alg == EdDSA:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case Supported(alg):
		key, err = rsa.GenerateKey(rand.Reader, MinRSABits)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedAlg, alg)
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}
