package jwtassert

import (
	"context"
	"crypto"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

// Key is one verification key, in standard library types only
// (internal/jwa's); JWK Sets become Keys through internal/jwkset, the
// module's one JWK Set parser.
type Key = jwa.Key

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

// StaticKeys is a fixed [KeySource]: a client's registered "jwks" parsed by
// jwkset.Parse, keys configured out of band, or keys already fetched by a
// caching JWK Set client.
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
