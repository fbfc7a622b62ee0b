package jwa_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

// TestDefaults pins the table: the default list of each kind of JWS, as
// the public defaults built on it (resource.DefaultAlgorithms,
// dpop.DefaultAlgorithms, the authorization server's metadata) publish it.
// Every list passes Allowlist unchanged, and each call returns a new slice.
func TestDefaults(t *testing.T) {
	t.Parallel()
	all := "[ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA]"
	tests := []struct {
		kind jwa.Kind
		want string
	}{
		{jwa.AccessToken, "[ES256 RS256]"},
		{jwa.ClientAssertion, "[ES256 RS256 PS256 EdDSA]"},
		{jwa.ServerToken, "[ES256 RS256 EdDSA]"},
		{jwa.IDToken, all},
		{jwa.DPoPProof, all},
		{jwa.Kind(0), "[]"},
		{jwa.Kind(99), "[]"},
	}
	for _, tt := range tests {
		got := jwa.Defaults(tt.kind)
		if fmt.Sprint(got) != tt.want {
			t.Errorf("Defaults(%d) = %v, want %s", tt.kind, got, tt.want)
		}
		if checked, err := jwa.Allowlist(got, nil); err != nil || !slices.Equal(checked, got) {
			t.Errorf("Defaults(%d) is not a valid allowlist: %v, %v", tt.kind, checked, err)
		}
		if len(got) > 0 {
			got[0] = "none"
			if jwa.Defaults(tt.kind)[0] == "none" {
				t.Errorf("Defaults(%d) shares its slice between calls", tt.kind)
			}
		}
	}
}

// TestCheckPublic: the member rule of a published key refuses every
// private parameter and symmetric keys, with or without "k".
func TestCheckPublic(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if err := jwa.CheckPublic(map[string]any{"kty": "RSA", "n": "AQAB", "e": "AQAB", name: "x"}); err == nil {
			t.Errorf("a key with %q passed", name)
		}
	}
	if err := jwa.CheckPublic(map[string]any{"kty": "oct", "kid": "hmac"}); err == nil {
		t.Error("an oct key without k passed")
	}
	if err := jwa.CheckPublic(map[string]any{"kty": "EC", "crv": "P-256", "x": "a", "y": "b", "kid": "d"}); err != nil {
		t.Errorf("a public key was refused: %v", err)
	}
}

// TestGenerateKey: a generated key is of the type its algorithm needs
// (CheckKey), and an algorithm outside the asymmetric set gets no key.
func TestGenerateKey(t *testing.T) {
	t.Parallel()
	for _, alg := range jwa.Defaults(jwa.DPoPProof) {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			key, err := jwa.GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			if err := jwa.CheckKey(key.Public(), alg); err != nil {
				t.Fatalf("generated key does not fit %s: %v", alg, err)
			}
		})
	}
	for _, alg := range []string{"none", "HS256", "", "es256"} {
		if key, err := jwa.GenerateKey(alg); key != nil || !errors.Is(err, jwa.ErrUnsupportedAlg) {
			t.Errorf("GenerateKey(%q) = %v, %v; want ErrUnsupportedAlg", alg, key, err)
		}
	}
}
