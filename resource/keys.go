package resource

import (
	"context"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwkset"
)

// Key is one public verification key of an authorization server, in
// standard library types only: ID is the "kid" (empty matches only tokens
// without "kid"), Algorithm the JWS "alg" the key is restricted to (empty:
// any allowed algorithm that fits the key type), Public an
// *ecdsa.PublicKey, an *rsa.PublicKey of 2048 bits or more or an
// ed25519.PublicKey (other types never verify anything).
type Key = jwa.Key

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

// ParseStaticKeys parses a JWK Set document (RFC 7517 §5), such as an
// authorization server's keys distributed out of band, by the rule
// [RemoteKeys] applies to fetched sets and the authorization server to
// clients' sets: at most 64 KiB and 100 keys, strict JSON (case-sensitive
// names, duplicates refused); the whole set refused when any member holds
// private or symmetric key material; members whose key type, curve, "use",
// "key_ops" or "alg" do not make them usable for verifying a signature are
// skipped; a set with no usable key left is refused. Errors match
// [ErrInvalidConfig].
func ParseStaticKeys(jwks []byte) (StaticKeys, error) {
	keys, err := jwkset.Parse(jwks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return StaticKeys(keys), nil
}

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

func checkAlgorithms(algs []string) ([]string, error) {
	if algs != nil && len(algs) == 0 {
		return nil, fmt.Errorf("%w: empty algorithm allowlist", ErrInvalidConfig)
	}
	out, err := jwa.Allowlist(algs, DefaultAlgorithms())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return out, nil
}
