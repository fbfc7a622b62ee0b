package jwtassert

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/cryptosigner"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwa"
)

// jtiBytes is the entropy of a generated jti: 128 bits.
const jtiBytes = 16

// SignerConfig is what every JWT the module signs needs: client
// assertions and ID-JAGs here, DPoP proofs in package dpop.
type SignerConfig struct {
	// Key signs. Required.
	Key crypto.Signer
	// Algorithm is the JWS "alg"; "" picks the one of the key type
	// (jwa.ForKey). It must be an asymmetric algorithm the key fits.
	Algorithm string
	// KeyID is the "kid" header; "" leaves it out.
	KeyID string
	// Type is the "typ" header.
	Type string
	// EmbedJWK puts the public key in the "jwk" header (RFC 9449 §4.2).
	EmbedJWK bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand is the source of jti values; nil means crypto/rand.
	Rand io.Reader
}

// Signer signs JWTs with go-jose. It is safe for concurrent use.
type Signer struct {
	signer jose.Signer
	alg    string
	now    clock.Func
	rand   io.Reader
}

// NewSigner checks that c.Key fits c.Algorithm and returns a Signer.
func NewSigner(c SignerConfig) (*Signer, error) {
	if c.Key == nil {
		return nil, errors.New("jwtassert: a signing key is required")
	}
	alg := c.Algorithm
	if alg == "" {
		a, err := jwa.ForKey(c.Key.Public())
		if err != nil {
			return nil, fmt.Errorf("jwtassert: %w", err)
		}
		alg = a
	}
	if !jwa.Supported(alg) {
		return nil, fmt.Errorf("jwtassert: algorithm %q is not an asymmetric JWS algorithm", alg)
	}
	if err := jwa.CheckKey(c.Key.Public(), alg); err != nil {
		return nil, fmt.Errorf("jwtassert: key cannot sign %s: %w", alg, err)
	}
	opts := (&jose.SignerOptions{EmbedJWK: c.EmbedJWK}).WithType(jose.ContentType(c.Type))
	if c.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), c.KeyID)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: signingKey(c.Key)}, opts)
	if err != nil {
		return nil, fmt.Errorf("jwtassert: signer: %w", err)
	}
	return &Signer{signer: s, alg: alg, now: c.Now, rand: cmp.Or[io.Reader](c.Rand, rand.Reader)}, nil
}

// newLifetimeSigner is [NewSigner] for JWTs valid for life, or def when
// life is zero; life must be between one second and max.
func newLifetimeSigner(c SignerConfig, life, def, max time.Duration) (*Signer, time.Duration, error) {
	life = cmp.Or(life, def)
	if life < time.Second || life > max {
		return nil, 0, fmt.Errorf("jwtassert: Lifetime must be between 1s and %v", max)
	}
	s, err := NewSigner(c)
	return s, life, err
}

// Algorithm returns the JWS algorithm of the signatures.
func (s *Signer) Algorithm() string { return s.alg }

// Now returns the current time of the Signer's clock.
func (s *Signer) Now() time.Time { return s.now.Now() }

// JTI returns a fresh random jti: 128 bits, base64url.
func (s *Signer) JTI() (string, error) {
	var b [jtiBytes]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("jwtassert: jti: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Sign serializes claims as the JWT payload and signs it.
func (s *Signer) Sign(claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("jwtassert: claims: %w", err)
	}
	obj, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("jwtassert: sign: %w", err)
	}
	return obj.CompactSerialize()
}

// signingKey returns the value to put in go-jose's SigningKey.Key for k: the
// key itself for the types go-jose signs with natively (*ecdsa.PrivateKey,
// *rsa.PrivateKey, ed25519.PrivateKey), and any other crypto.Signer (a key
// in an HSM or KMS) wrapped with go-jose's cryptosigner.
func signingKey(k crypto.Signer) any {
	switch k := k.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
		return k
	case *ed25519.PrivateKey:
		return *k
	}
	return cryptosigner.Opaque(k)
}
