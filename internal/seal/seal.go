package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version is the first byte of every sealed value.
const version = 1

// idSize is the size of a key ID: the first bytes of the key's SHA-256.
const idSize = 8

// ErrOpen is returned for a value that does not open: damaged, sealed
// under a key not in the ring, or bound to another context.
var ErrOpen = errors.New("seal: value does not open")

// Ring seals under its first key and opens under any. It is safe for
// concurrent use.
type Ring struct {
	current [idSize]byte
	keys    map[[idSize]byte]cipher.AEAD
}

// NewRing returns a ring whose first key seals; the others only open.
func NewRing(current []byte, old ...[]byte) (*Ring, error) {
	r := &Ring{keys: make(map[[idSize]byte]cipher.AEAD)}
	for i, k := range append([][]byte{current}, old...) {
		if len(k) != KeySize {
			return nil, fmt.Errorf("seal: key %d is %d bytes, want %d", i, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCMWithRandomNonce(block) // the nonce leads the ciphertext
		if err != nil {
			return nil, err
		}
		id := keyID(k)
		if i == 0 {
			r.current = id
		}
		r.keys[id] = aead
	}
	return r, nil
}

// ParseKey decodes a key written as base64 (standard or URL alphabet,
// padded or not) of exactly 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("seal: key is %d bytes, want %d", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("seal: key is not base64")
}

func keyID(k []byte) [idSize]byte {
	sum := sha256.Sum256(append([]byte("mcpauth seal key id\x00"), k...))
	return [idSize]byte(sum[:idSize])
}

// KeyID returns the hex ID of the sealing key, safe to log.
func (r *Ring) KeyID() string { return hex.EncodeToString(r.current[:]) }

// Seal encrypts plaintext bound to context: version, key ID, nonce,
// ciphertext and tag.
func (r *Ring) Seal(plaintext []byte, context string) []byte {
	aead := r.keys[r.current]
	out := append(make([]byte, 0, 1+idSize+len(plaintext)+aead.Overhead()), version)
	out = append(out, r.current[:]...)
	return aead.Seal(out, nil, plaintext, additionalData(out, context))
}

// Open decrypts a value from Seal with the same context.
func (r *Ring) Open(sealed []byte, context string) ([]byte, error) {
	if len(sealed) < 1+idSize || sealed[0] != version {
		return nil, ErrOpen
	}
	aead, ok := r.keys[[idSize]byte(sealed[1:1+idSize])]
	if !ok {
		return nil, ErrOpen
	}
	pt, err := aead.Open(nil, nil, sealed[1+idSize:], additionalData(sealed[:1+idSize], context))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// additionalData binds the header and the context.
func additionalData(head []byte, context string) []byte {
	return append(append([]byte(nil), head...), context...)
}
