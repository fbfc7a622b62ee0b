package jwtassert_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
)

// TestClientAssertionRoundTrip signs with ClientAssertionSigner for every
// key type and verifies with ClientAssertionVerifier: private_key_jwt for a
// URL client_id (CL-25, CIMD-03, CIMD-09).
func TestClientAssertionRoundTrip(t *testing.T) {
	t.Parallel()
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name string
		key  crypto.Signer
		alg  string
	}{
		{"ES256", oauthtest.FixedP256(t, 1), ""},
		{"ES384", oauthtest.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)), ""},
		{"RS256", rsaKey, ""},
		{"PS256", rsaKey, "PS256"},
		{"EdDSA", edKey, ""},
		{"opaque signer", oauthtest.OpaqueSigner{Signer: oauthtest.FixedP256(t, 2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := oauthtest.NewClock(t0())
			s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
				ClientID: clientID, Key: tt.key, Algorithm: tt.alg, KeyID: "kid-1", Now: clk.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			v, err := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{
				Audiences: []string{asIssuer}, Algorithms: []string{"ES256", "ES384", "RS256", "PS256", "EdDSA"},
				RequireExplicitType: true, Now: clk.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.Sign(asIssuer)
			if err != nil {
				t.Fatal(err)
			}
			keys := keyset.Static{{ID: "kid-1", Public: tt.key.Public()}}
			got, err := v.Verify(context.Background(), a, clientID, keys)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !got.ExpiresAt.Equal(t0().Add(jwtassert.DefaultAssertionLifetime)) || !got.IssuedAt.Equal(t0()) {
				t.Fatalf("times = %v, %v", got.IssuedAt, got.ExpiresAt)
			}
			if id, err := jwtassert.UnverifiedClientID(a); err != nil || id != clientID {
				t.Fatalf("UnverifiedClientID = %q, %v", id, err)
			}
			b, _ := s.Sign(asIssuer)
			if b == a {
				t.Fatal("two assertions are identical (jti not fresh)")
			}
		})
	}
}

// TestClientAssertionGolden pins the decoded header and claims.
func TestClientAssertionGolden(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
		ClientID: clientID, Key: oauthtest.FixedP256(t, 1), KeyID: "client-key-1", Now: clk.Now,
		Rand: bytes.NewReader(bytes.Repeat([]byte{0x5A}, 16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Sign(asIssuer)
	if err != nil {
		t.Fatal(err)
	}
	h, c := oauthtest.DecodeJWS(t, a)
	golden.JSON(t, "client_assertion.json", map[string]any{"header": h, "claims": c})
}

func TestNewClientAssertionSignerRejects(t *testing.T) {
	t.Parallel()
	key := oauthtest.FixedP256(t, 1)
	tests := []struct {
		name string
		cfg  jwtassert.ClientAssertionSignerConfig
	}{
		{"no client_id", jwtassert.ClientAssertionSignerConfig{Key: key}},
		{"no key", jwtassert.ClientAssertionSignerConfig{ClientID: "c"}},
		{"HS256", jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: key, Algorithm: "HS256"}},
		{"alg for another key", jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: key, Algorithm: "RS256"}},
		{"lifetime too long", jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: key, Lifetime: time.Hour}},
		{"weak RSA", jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: oauthtest.Must(rsa.GenerateKey(rand.Reader, 1024))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := jwtassert.NewClientAssertionSigner(tt.cfg); err == nil {
				t.Fatal("accepted a bad config")
			}
		})
	}
	s, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: key})
	if _, err := s.Sign(""); err == nil {
		t.Fatal("Sign accepted an empty audience")
	}
}
