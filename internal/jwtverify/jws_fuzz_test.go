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

// FuzzParseCompact: any string either fails ParseCompact with one of its
// sentinels or yields one signature whose check with an unrelated key
// fails with a sentinel of VerifySignature; nothing panics.
func FuzzParseCompact(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.Add(sign(f, key, "k1", nil))
	f.Add(sign(f, key, "", map[jose.HeaderKey]any{"b64": false}))
	f.Add("e30.e30.")
	f.Add("a.b.c.d.e")
	src := keyset.Static{{ID: "k1", Public: &other.PublicKey}}
	algs := []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA}
	f.Fuzz(func(t *testing.T, raw string) {
		jws, err := jwtverify.ParseCompact(raw, algs)
		if err != nil {
			if !errors.Is(err, jwtverify.ErrMalformed) && !errors.Is(err, jwtverify.ErrAlgorithm) {
				t.Fatalf("ParseCompact error outside its sentinels: %v", err)
			}
			return
		}
		if len(jws.Signatures) != 1 {
			t.Fatalf("%d signatures", len(jws.Signatures))
		}
		_, err = jwtverify.VerifySignature(context.Background(), jws, src)
		if !errors.Is(err, jwtverify.ErrSignature) && !errors.Is(err, jwtverify.ErrUnknownKey) {
			t.Fatalf("VerifySignature with an unrelated key = %v", err)
		}
	})
}
