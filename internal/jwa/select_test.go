package jwa_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

func TestCandidates(t *testing.T) {
	t.Parallel()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	pub := &p256.PublicKey
	keys := []jwa.Key{
		{ID: "", Public: pub},                        // 0: no ID
		{ID: "a", Public: pub},                       // 1
		{ID: "b", Public: pub},                       // 2: another ID
		{ID: "a", Public: &p384.PublicKey},           // 3: wrong curve for ES256
		{ID: "a", Algorithm: "ES384", Public: pub},   // 4: restricted to another alg
		{ID: "a", Algorithm: jwa.ES256, Public: pub}, // 5
	}
	many := slices.Repeat([]jwa.Key{{Public: pub}}, 10)
	mixed := []jwa.Key{{ID: "a", Public: pub}, {Public: pub}, {ID: "a", Public: pub}, {Public: pub}, {ID: "a", Public: pub}, {Public: pub}}
	tests := []struct {
		name      string
		keys      []jwa.Key
		kid, alg  string
		wantIndex []int // into keys; nil with wantCount
		wantCount int
	}{
		{"kid: exact first, then without ID", keys, "a", jwa.ES256, []int{1, 5, 0}, 3},
		{"no kid: every fitting key", keys, "", jwa.ES256, []int{0, 1, 2, 5}, 4},
		{"unknown kid: keys without ID only", keys, "z", jwa.ES256, []int{0}, 1},
		{"nothing fits", keys, "a", jwa.RS256, nil, 0},
		{"bounded", many, "", jwa.ES256, nil, jwa.MaxKeyTries},
		{"bounded across both passes, kid first", mixed, "a", jwa.ES256, []int{0, 2, 4, 1}, jwa.MaxKeyTries},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []jwa.Key
			for k := range jwa.Candidates(tc.keys, tc.kid, tc.alg) {
				got = append(got, k)
			}
			if len(got) != tc.wantCount {
				t.Fatalf("got %d candidates, want %d", len(got), tc.wantCount)
			}
			for i, idx := range tc.wantIndex {
				if got[i] != tc.keys[idx] {
					t.Errorf("candidate %d is not key %d", i, idx)
				}
			}
		})
	}
}
