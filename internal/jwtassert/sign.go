package jwtassert

import (
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtassert/jwa"
)

// jtiBytes is the entropy of a generated jti: 128 bits.
const jtiBytes = 16

// signerConfig is what every JWT this package builds needs.
type signerConfig struct {
	key  crypto.Signer
	alg  string
	kid  string
	typ  string
	now  func() time.Time
	rand io.Reader
}

// jwtSigner signs JWTs with go-jose. It is safe for concurrent use.
type jwtSigner struct {
	signer jose.Signer
	alg    string
	now    func() time.Time
	rand   io.Reader
}

func newJWTSigner(c signerConfig) (*jwtSigner, error) {
	if c.key == nil {
		return nil, errors.New("jwtassert: a signing key is required")
	}
	alg := c.alg
	if alg == "" {
		a, err := jwa.ForKey(c.key.Public())
		if err != nil {
			return nil, fmt.Errorf("jwtassert: %w", err)
		}
		alg = a
	}
	if !jwa.Supported(alg) {
		return nil, fmt.Errorf("jwtassert: algorithm %q is not an asymmetric JWS algorithm", alg)
	}
	if err := jwa.CheckKey(c.key.Public(), alg); err != nil {
		return nil, fmt.Errorf("jwtassert: key cannot sign %s: %w", alg, err)
	}
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(c.typ))
	if c.kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), c.kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: jwa.SigningKey(c.key)}, opts)
	if err != nil {
		return nil, fmt.Errorf("jwtassert: signer: %w", err)
	}
	rnd := c.rand
	if rnd == nil {
		rnd = rand.Reader
	}
	return &jwtSigner{signer: s, alg: alg, now: c.now, rand: rnd}, nil
}

func (s *jwtSigner) clock() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

func (s *jwtSigner) jti() (string, error) {
	var b [jtiBytes]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return "", fmt.Errorf("jwtassert: jti: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// sign serializes claims as the JWT payload and signs it.
func (s *jwtSigner) sign(claims any) (string, error) {
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
