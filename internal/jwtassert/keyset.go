package jwtassert

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwtassert/jwa"
)

// Key is one verification key, in standard library types only.
type Key struct {
	// ID is the "kid" the key is published under; empty if none.
	ID string
	// Algorithm restricts the key to one JWS "alg"; empty means any algorithm
	// that fits the key type.
	Algorithm string
	// Public is an *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey.
	Public crypto.PublicKey
}

// KeySource resolves the verification keys of one party (a client or a
// trusted issuer). kid is the JWT's "kid" header, empty if it has none; a
// remote source may use it to refresh its cache, but may return more keys
// than match. A KeySource never verifies anything: selection by kid and alg
// and the signature check stay in this package. Implementations must be safe
// for concurrent use; an error makes verification fail with
// ErrKeySourceUnavailable.
type KeySource interface {
	Keys(ctx context.Context, kid string) ([]Key, error)
}

// StaticKeys is a fixed [KeySource]: a client's registered "jwks", keys
// configured out of band, or keys already fetched by a caching JWKS client
// and converted to standard types.
type StaticKeys []Key

// Keys implements [KeySource]; it returns every key.
func (s StaticKeys) Keys(context.Context, string) ([]Key, error) { return s, nil }

// PublicKeys returns a StaticKeys holding pubs without IDs or algorithm
// restrictions.
func PublicKeys(pubs ...crypto.PublicKey) StaticKeys {
	out := make(StaticKeys, len(pubs))
	for i, p := range pubs {
		out[i] = Key{Public: p}
	}
	return out
}

// Limits of ParseJWKS.
const (
	maxJWKSSize = 64 << 10
	maxJWKSKeys = 100
)

// ErrJWKS is wrapped by every error of [ParseJWKS].
var ErrJWKS = errors.New("jwtassert: unusable JWK set")

// ParseJWKS parses an RFC 7517 §5 JWK Set (a client's "jwks" metadata, or a
// fetched "jwks_uri" document) into verification keys. Following §5, keys
// it cannot use are skipped: unknown "kty" or curve, RSA under 2048 bits,
// "use" other than "sig", malformed members. A set holding any private or
// symmetric key is refused whole, as is a set over 64 KiB or 100 keys.
// Decoding is strict (case-sensitive names, no duplicates).
func ParseJWKS(data []byte) (StaticKeys, error) {
	if len(data) > maxJWKSSize {
		return nil, fmt.Errorf("%w: larger than 64 KiB", ErrJWKS)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := jsonx.DecodeObject(data, &set); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJWKS, err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("%w: more than %d keys", ErrJWKS, maxJWKSKeys)
	}
	var out StaticKeys
	for _, raw := range set.Keys {
		k, ok, err := parseJWK(raw)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// parseJWK returns the key, or ok=false for a key to skip.
func parseJWK(raw []byte) (Key, bool, error) {
	var m map[string]any
	if err := jsonx.DecodeObject(raw, &m); err != nil {
		return Key{}, false, fmt.Errorf("%w: a key is not a JSON object", ErrJWKS)
	}
	for _, priv := range [...]string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[priv]; ok {
			return Key{}, false, fmt.Errorf("%w: contains a private or symmetric key", ErrJWKS)
		}
	}
	if use, ok := m["use"]; ok && use != "sig" {
		return Key{}, false, nil
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil || !jwk.Valid() || !jwk.IsPublic() {
		return Key{}, false, nil
	}
	alg := jwk.Algorithm
	if alg != "" && !jwa.Supported(alg) {
		return Key{}, false, nil
	}
	check := alg
	if check == "" {
		a, err := jwa.ForKey(jwk.Key)
		if err != nil {
			return Key{}, false, nil
		}
		check = a
	}
	if jwa.CheckKey(jwk.Key, check) != nil {
		return Key{}, false, nil
	}
	return Key{ID: jwk.KeyID, Algorithm: alg, Public: jwk.Key}, true, nil
}

// maxKeyTries bounds the signature checks one JWT can cause.
const maxKeyTries = 4

// candidates returns the keys that may have signed a JWT with kid and alg:
// keys published under that kid first, then keys without an ID, each with a
// fitting algorithm restriction and key type. At most maxKeyTries.
func candidates(keys []Key, kid, alg string) []Key {
	var out []Key
	for pass := range 2 {
		for _, k := range keys {
			exact := kid != "" && k.ID == kid
			if (pass == 0) != exact || (!exact && k.ID != "" && kid != "") {
				continue
			}
			if k.Algorithm != "" && k.Algorithm != alg {
				continue
			}
			if jwa.CheckKey(k.Public, alg) != nil {
				continue
			}
			out = append(out, k)
			if len(out) == maxKeyTries {
				return out
			}
		}
	}
	return out
}
