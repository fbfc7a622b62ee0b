package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// Algorithms NewKey accepts.
const (
	ES256 = "ES256"
	ES384 = "ES384"
	RS256 = "RS256"
	PS256 = "PS256"
	EdDSA = "EdDSA"
)

// Key is an asymmetric signing key with its JWS algorithm and key ID.
type Key struct {
	// ID is the "kid" put in token headers and in the published JWK.
	ID string
	// Algorithm is the JWS "alg" the key signs with.
	Algorithm string
	// Signer is the private key.
	Signer crypto.Signer
}

// NewKey generates a key for alg (ES256, ES384, RS256, PS256 or EdDSA; RSA
// keys are 2048 bits) with key ID kid.
func NewKey(t testing.TB, alg, kid string) *Key {
	t.Helper()
	var (
		s   crypto.Signer
		err error
	)
	switch alg {
	case ES256:
		s, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case ES384:
		s, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case RS256, PS256:
		s, err = rsa.GenerateKey(rand.Reader, 2048)
	case EdDSA:
		_, s, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("oauthtest: unsupported algorithm %q", alg)
	}
	if err != nil {
		t.Fatalf("oauthtest: generate %s key: %v", alg, err)
	}
	return &Key{ID: kid, Algorithm: alg, Signer: s}
}

// Public returns the public key.
func (k *Key) Public() crypto.PublicKey { return k.Signer.Public() }

// JWK returns the public key as a JWK with "kid", "alg" and "use":"sig".
func (k *Key) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Public(), KeyID: k.ID, Algorithm: k.Algorithm, Use: "sig"}
}

// PublicPEM returns the public key in PEM (SubjectPublicKeyInfo) form, the
// bytes an algorithm-confusion attacker uses as an HMAC secret.
func (k *Key) PublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatalf("oauthtest: marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// JWKS returns a JWK Set of the public keys.
func JWKS(keys ...*Key) jose.JSONWebKeySet {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.JWK())
	}
	return set
}
