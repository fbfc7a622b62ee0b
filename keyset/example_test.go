package keyset_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"

	"github.com/mcpauth/mcpauth/keyset"
)

// A fixed set of keys distributed out of band.
func ExampleStatic() {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	var src keyset.Source = keyset.Static{{ID: "2026-01", Algorithm: "ES256", Public: &priv.PublicKey}}
	keys, err := src.Keys(context.Background(), "2026-01")
	fmt.Println(len(keys), err)
	// Output: 1 <nil>
}

// The registered public keys of a client, without key IDs.
func ExamplePublicKeys() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var src keyset.Source = keyset.PublicKeys(key.Public())
	keys, _ := src.Keys(context.Background(), "")
	fmt.Println(len(keys))
	// Output: 1
}

func ExampleStatic_Keys() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set := keyset.Static{{ID: "k1", Algorithm: "ES256", Public: key.Public()}}
	keys, err := set.Keys(context.Background(), "k1")
	fmt.Println(keys[0].ID, err)
	// Output: k1 <nil>
}
