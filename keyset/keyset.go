package keyset

import (
	"context"
	"crypto"
	"errors"
)

// Key is one public signature verification key.
type Key struct {
	// ID is the "kid" the key is published under; empty if none. A key
	// without an ID may check a token with any "kid"; a key with an ID only
	// tokens with that "kid" or none.
	ID string
	// Algorithm restricts the key to one JWS "alg"; empty means any allowed
	// algorithm that fits the key type.
	Algorithm string
	// Public is an *ecdsa.PublicKey (P-256, P-384 or P-521), an
	// *rsa.PublicKey of at least 2048 bits or an ed25519.PublicKey. Other
	// types never verify anything.
	Public crypto.PublicKey
}

// Source resolves the verification keys of one party: an authorization
// server, a client, a trusted issuer.
//
// Keys returns the keys that may have signed a token whose header names
// kid (empty when the token has none). A Source may use kid to decide to
// refresh a cache, and may return more keys than match: the verifier
// selects among them. It returns an error matching [ErrUnknownKey] when it
// knows the party's keys but none has that ID (the token is refused), and
// any other error, preferably matching [ErrUnavailable], when the keys
// cannot be obtained at all (the verifier answers "try later").
//
// Implementations must be safe for concurrent use and bound any I/O they do.
// The returned slice is only read.
type Source interface {
	Keys(ctx context.Context, kid string) ([]Key, error)
}

// Errors a [Source] reports.
var (
	// ErrUnknownKey: the keys are known, but none has the requested ID.
	ErrUnknownKey = errors.New("keyset: no key with that ID")
	// ErrUnavailable: the keys cannot be obtained.
	ErrUnavailable = errors.New("keyset: keys unavailable")
)

// Static is a fixed [Source], for keys distributed out of band and tests.
// It is safe for concurrent use as long as it is not modified.
type Static []Key

// Keys returns every key; the verifier selects by kid and alg. It returns
// [ErrUnknownKey] when s is empty.
func (s Static) Keys(context.Context, string) ([]Key, error) {
	if len(s) == 0 {
		return nil, ErrUnknownKey
	}
	return s, nil
}

// PublicKeys returns a Static holding pubs, without IDs or algorithm
// restrictions.
func PublicKeys(pubs ...crypto.PublicKey) Static {
	out := make(Static, len(pubs))
	for i, p := range pubs {
		out[i] = Key{Public: p}
	}
	return out
}
