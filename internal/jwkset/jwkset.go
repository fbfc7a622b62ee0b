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

// Key is one public verification key, in standard library types only.
type Key struct {
	// ID is the "kid" the key is published under; empty if none.
	ID string
	// Algorithm restricts the key to one JWS "alg"; empty means any
	// algorithm that fits the key type.
	Algorithm string
	// Public is an *ecdsa.PublicKey (P-256, P-384 or P-521), an
	// *rsa.PublicKey of 2048 to MaxRSABits bits or an ed25519.PublicKey.
	Public crypto.PublicKey
}

// Fits reports whether k may verify a signature made with alg: the key's
// own "alg" restriction, if any, names alg, and the key type fits alg
// ([CheckKey], RFC 8725 §3.1).
func (k Key) Fits(alg string) bool {
	return (k.Algorithm == "" || k.Algorithm == alg) && CheckKey(k.Public, alg) == nil
}

// SecretMember returns the first member of the JWK m that carries private
// or symmetric key material (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2),
// and false when it has none: the one rule by which a key set here and a
// DPoP proof's "jwk" header are refused.
func SecretMember(m map[string]any) (string, bool) {
	for _, name := range [...]string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[name]; ok {
			return name, true
		}
	}
	return "", false
}

// Parse parses a JWK Set document into its public signature verification
// keys, by the rules of the package documentation. Every error wraps
// [ErrInvalid].
func Parse(data []byte) ([]Key, error) {
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
	var out []Key
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
func parseMember(raw []byte) (Key, bool, error) {
	var m map[string]any
	if err := jsonx.DecodeObject(raw, &m); err != nil {
		return Key{}, false, errors.New("not a JSON object")
	}
	if name, ok := SecretMember(m); ok {
		return Key{}, false, fmt.Errorf("private or symmetric key material (%q)", name)
	}
	if m["kty"] == "oct" {
		return Key{}, false, errors.New("symmetric key")
	}
	if !forVerification(m) {
		return Key{}, false, nil
	}
	key, err := jwk.ParseKey(raw)
	if err != nil {
		return Key{}, false, nil
	}
	switch key.(type) {
	case jwk.ECDSAPrivateKey, jwk.RSAPrivateKey, jwk.OKPPrivateKey, jwk.SymmetricKey:
		return Key{}, false, errors.New("private or symmetric key")
	}
	var rawKey any
	if err := key.Raw(&rawKey); err != nil {
		return Key{}, false, nil
	}
	pub := publicKey(rawKey)
	if pub == nil {
		return Key{}, false, nil
	}
	alg, ok := algorithm(m)
	if !ok {
		return Key{}, false, nil
	}
	check := alg
	if check == "" {
		if check, err = ForKey(pub); err != nil {
			return Key{}, false, nil
		}
	}
	if CheckKey(pub, check) != nil {
		return Key{}, false, nil
	}
	return Key{ID: key.KeyID(), Algorithm: alg, Public: pub}, true, nil
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
	return alg, ok && Supported(alg)
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
