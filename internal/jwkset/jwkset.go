package jwkset

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
)

// Limits of [Parse].
const (
	// MaxSize bounds the JWK Set document in bytes.
	MaxSize = 64 << 10
	// MaxKeys bounds the members of "keys", usable or not.
	MaxKeys = 100
	// MaxRSABits bounds RSA moduli, so one published key cannot make every
	// signature check expensive. Larger keys are skipped.
	MaxRSABits = 8192
)

// ErrInvalid is wrapped by every error of [Parse].
var ErrInvalid = errors.New("jwkset: unusable JWK Set")

// Parse parses a JWK Set document into its public signature verification
// keys, by the rules of the package documentation. Every error wraps
// [ErrInvalid].
func Parse(data []byte) ([]jwa.Key, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxSize)
	}
	var set struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := jsonx.DecodeObject(data, &set); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if set.Keys == nil {
		return nil, fmt.Errorf("%w: no \"keys\" member", ErrInvalid)
	}
	members := *set.Keys
	if len(members) > MaxKeys {
		return nil, fmt.Errorf("%w: more than %d keys", ErrInvalid, MaxKeys)
	}
	var out []jwa.Key
	for i, raw := range members {
		k, ok, err := parseMember(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %w", ErrInvalid, i, err)
		}
		if ok {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no usable signature verification key", ErrInvalid)
	}
	return out, nil
}

// parseMember returns the key of one member of "keys", ok=false for a key
// to skip, or an error that refuses the whole set.
func parseMember(raw []byte) (jwa.Key, bool, error) {
	var m map[string]any
	if err := jsonx.DecodeObject(raw, &m); err != nil {
		return jwa.Key{}, false, errors.New("not a JSON object")
	}
	if err := jwa.CheckPublic(m); err != nil {
		return jwa.Key{}, false, err
	}
	if !forVerification(m) {
		return jwa.Key{}, false, nil
	}
	key, err := jwk.ParseKey(raw)
	if err != nil {
		return jwa.Key{}, false, nil
	}
	switch key.(type) {
	case jwk.ECDSAPrivateKey, jwk.RSAPrivateKey, jwk.OKPPrivateKey, jwk.SymmetricKey:
		return jwa.Key{}, false, errors.New("private or symmetric key")
	}
	var rawKey any
	if err := key.Raw(&rawKey); err != nil {
		return jwa.Key{}, false, nil
	}
	pub := publicKey(rawKey)
	if pub == nil {
		return jwa.Key{}, false, nil
	}
	alg, ok := algorithm(m)
	if !ok {
		return jwa.Key{}, false, nil
	}
	check := alg
	if check == "" {
		if check, err = jwa.ForKey(pub); err != nil {
			return jwa.Key{}, false, nil
		}
	}
	if jwa.CheckKey(pub, check) != nil {
		return jwa.Key{}, false, nil
	}
	return jwa.Key{ID: key.KeyID(), Algorithm: alg, Public: pub}, true, nil
}

// forVerification reports whether "use" and "key_ops", when present, allow
// signature verification (RFC 7517 §4.2, §4.3).
func forVerification(m map[string]any) bool {
	if use, ok := m["use"]; ok && use != "sig" {
		return false
	}
	ops, ok := m["key_ops"]
	if !ok {
		return true
	}
	list, ok := ops.([]any)
	return ok && slices.Contains(list, any("verify"))
}

// algorithm returns the member "alg" when it is absent ("") or an
// asymmetric JWS algorithm; ok=false otherwise.
func algorithm(m map[string]any) (string, bool) {
	v, present := m["alg"]
	if !present {
		return "", true
	}
	alg, ok := v.(string)
	return alg, ok && jwa.Supported(alg)
}

// publicKey returns k when it is a usable public key type: an ECDSA key
// whose point is on its curve, an RSA key of at most MaxRSABits (the floor
// is checked with the algorithm) or an Ed25519 key.
func publicKey(k any) crypto.PublicKey {
	switch k := k.(type) {
	case *ecdsa.PublicKey:
		if _, err := k.ECDH(); err != nil {
			return nil
		}
		return k
	case *rsa.PublicKey:
		if k.N.BitLen() > MaxRSABits {
			return nil
		}
		return k
	case ed25519.PublicKey:
		return k
	}
	return nil
}
