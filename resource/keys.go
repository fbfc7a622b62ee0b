package resource

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
)

// Key is one public verification key of an authorization server. It holds
// only standard library types.
type Key struct {
	// ID is the key ID ("kid"). Empty matches only tokens without "kid".
	ID string
	// Algorithm is the JWS algorithm the key is restricted to ("alg" of the
	// JWK). Empty means any allowed algorithm that fits the key type.
	Algorithm string
	// Public is *ecdsa.PublicKey, *rsa.PublicKey (2048 bits or more) or
	// ed25519.PublicKey. Other types never verify anything.
	Public crypto.PublicKey
}

// KeySource resolves an issuer's signing keys. It only finds keys; parsing,
// the algorithm allowlist and the signature check happen in the Verifier.
//
// Keys returns the keys with ID kid (all keys when kid is ""). It returns an
// error matching [ErrUnknownKey] when no key has that ID, and one matching
// [ErrUnavailable] when the keys cannot be obtained at all. Implementations
// must be safe for concurrent use and must bound any I/O they do.
type KeySource interface {
	Keys(ctx context.Context, kid string) ([]Key, error)
}

// StaticKeys is a fixed [KeySource], for tests and keys distributed out of
// band. It is safe for concurrent use as long as it is not modified.
type StaticKeys []Key

// Keys returns the keys with ID kid, or all keys when kid is "".
func (s StaticKeys) Keys(_ context.Context, kid string) ([]Key, error) {
	if kid == "" {
		if len(s) == 0 {
			return nil, ErrUnknownKey
		}
		return s, nil
	}
	var out []Key
	for i, k := range s {
		if k.ID != kid {
			continue
		}
		if out == nil {
			out = s[i : i+1 : i+1] // the common case: one match, no allocation
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, ErrUnknownKey
	}
	return out, nil
}

// algorithmFits reports whether alg is an accepted JWS algorithm and
// whether k has the key type it is bound to (RFC 8725 §3.1: the algorithm
// must fit the key; RSA keys need 2048 bits or more).
func algorithmFits(alg string, k crypto.PublicKey) (known, fits bool) {
	switch alg {
	case "ES256":
		return true, ecOn(k, elliptic.P256())
	case "ES384":
		return true, ecOn(k, elliptic.P384())
	case "ES512":
		return true, ecOn(k, elliptic.P521())
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		rk, ok := k.(*rsa.PublicKey)
		return true, ok && rk.N != nil && rk.N.BitLen() >= 2048
	case "EdDSA":
		ek, ok := k.(ed25519.PublicKey)
		return true, ok && len(ek) == ed25519.PublicKeySize
	}
	return false, false
}

func ecOn(k crypto.PublicKey, c elliptic.Curve) bool {
	ek, ok := k.(*ecdsa.PublicKey)
	return ok && ek.Curve == c
}

// keyFits reports whether k may verify a signature made with alg.
func keyFits(k Key, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	_, fits := algorithmFits(alg, k.Public)
	return fits
}

func checkAlgorithms(algs []string) ([]string, error) {
	if algs == nil {
		algs = DefaultAlgorithms()
	}
	if len(algs) == 0 {
		return nil, fmt.Errorf("%w: empty algorithm allowlist", ErrInvalidConfig)
	}
	out := make([]string, 0, len(algs))
	for _, a := range algs {
		if known, _ := algorithmFits(a, nil); !known {
			return nil, fmt.Errorf("%w: algorithm %q is not an accepted asymmetric JWS algorithm", ErrInvalidConfig, a)
		}
		out = append(out, a)
	}
	return out, nil
}
