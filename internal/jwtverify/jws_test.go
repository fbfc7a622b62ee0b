package jwtverify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
)

func sign(t testing.TB, key *ecdsa.PrivateKey, kid string, extra map[jose.HeaderKey]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	for k, v := range extra {
		opts = opts.WithHeader(k, v)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign([]byte(`{"iss":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type failingSource struct{}

func (failingSource) Keys(context.Context, string) ([]keyset.Key, error) {
	return nil, errors.New("down")
}

func TestParseCompactAndVerifySignature(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	es256 := []jose.SignatureAlgorithm{jose.ES256}
	tests := []struct {
		name     string
		raw      string
		algs     []jose.SignatureAlgorithm
		src      keyset.Source
		parseErr error
		wantErr  error
	}{
		{name: "kid match", raw: sign(t, key, "k1", nil), src: keyset.Static{{ID: "k1", Public: &key.PublicKey}}},
		{name: "key without ID for any kid", raw: sign(t, key, "k1", nil), src: keyset.PublicKeys(&key.PublicKey)},
		{name: "key under another ID never", raw: sign(t, key, "k1", nil), src: keyset.Static{{ID: "k2", Public: &key.PublicKey}}, wantErr: jwtverify.ErrUnknownKey},
		{name: "alg restriction", raw: sign(t, key, "", nil), src: keyset.Static{{Algorithm: "ES384", Public: &key.PublicKey}}, wantErr: jwtverify.ErrUnknownKey},
		{name: "wrong key", raw: sign(t, key, "", nil), src: keyset.PublicKeys(&other.PublicKey), wantErr: jwtverify.ErrSignature},
		{name: "source knows no such key", raw: sign(t, key, "k9", nil), src: keyset.Static{}, wantErr: keyset.ErrUnknownKey},
		{name: "source down", raw: sign(t, key, "", nil), src: failingSource{}, wantErr: jwtverify.ErrKeysUnavailable},
		{name: "no source", raw: sign(t, key, "", nil), wantErr: jwtverify.ErrUnknownKey},
		{name: "alg not allowed", raw: sign(t, key, "", nil), algs: []jose.SignatureAlgorithm{jose.RS256}, parseErr: jwtverify.ErrAlgorithm},
		{name: "unencoded payload option", raw: sign(t, key, "", map[jose.HeaderKey]any{"b64": true}), parseErr: jwtverify.ErrMalformed},
		{name: "not a JWS", raw: "a.b", parseErr: jwtverify.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			algs := tt.algs
			if algs == nil {
				algs = es256
			}
			jws, err := jwtverify.ParseCompact(tt.raw, algs)
			if !errors.Is(err, tt.parseErr) || (err == nil) != (tt.parseErr == nil) {
				t.Fatalf("ParseCompact = %v, want %v", err, tt.parseErr)
			}
			if err != nil {
				return
			}
			k, err := jwtverify.VerifySignature(context.Background(), jws, tt.src)
			if tt.wantErr == nil {
				if err != nil || !key.PublicKey.Equal(k.Public) {
					t.Fatalf("VerifySignature = %+v, %v", k, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifySignature error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
