package jwa

import (
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/keyset"
)

// Key is one public verification key: the public keyset.Key, so that
// keys flow from a caller's keyset.Source to every verifier unconverted.
type Key = keyset.Key

// Fits reports whether k may verify a signature made with alg: the key's
// own "alg" restriction, if any, names alg, and the key type fits alg
// ([CheckKey], RFC 8725 §3.1).
func Fits(k Key, alg string) bool {
	return (k.Algorithm == "" || k.Algorithm == alg) && CheckKey(k.Public, alg) == nil
}

// SecretMember returns the first member of the JWK m that carries private
// or symmetric key material (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2),
// and false when it has none: the one rule by which a published key and a
// DPoP proof's "jwk" header are refused.
func SecretMember(m map[string]any) (string, bool) {
	for _, name := range [...]string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[name]; ok {
			return name, true
		}
	}
	return "", false
}

// CheckPublic returns an error when the JWK m may not be published as a
// verification key: it carries private or symmetric key material
// ([SecretMember]) or is a symmetric key ("kty" "oct", with or without
// "k"). A JWK Set with such a member is a leaked secret or a mistake, and
// is refused whole.
func CheckPublic(m map[string]any) error {
	if name, ok := SecretMember(m); ok {
		return fmt.Errorf("private or symmetric key material (%q)", name)
	}
	if m["kty"] == "oct" {
		return errors.New("symmetric key")
	}
	return nil
}
