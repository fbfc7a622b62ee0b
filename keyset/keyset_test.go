package keyset_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/keyset"
)

func TestStatic(t *testing.T) {
	t.Parallel()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		keys    keyset.Static
		kid     string
		want    int
		wantErr error
	}{
		{name: "empty set", keys: nil, kid: "a", wantErr: keyset.ErrUnknownKey},
		{name: "empty set, no kid", keys: keyset.Static{}, wantErr: keyset.ErrUnknownKey},
		{name: "every key, the verifier selects", keys: keyset.Static{{ID: "a", Public: pub}, {ID: "b", Public: pub}}, kid: "a", want: 2},
		{name: "no kid", keys: keyset.PublicKeys(pub, pub), want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.keys.Keys(context.Background(), tt.kid)
			if !errors.Is(err, tt.wantErr) || len(got) != tt.want {
				t.Fatalf("Keys = %d keys, %v; want %d, %v", len(got), err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPublicKeys(t *testing.T) {
	t.Parallel()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := keyset.PublicKeys(pub)
	if len(got) != 1 || got[0].ID != "" || got[0].Algorithm != "" || !pub.Equal(got[0].Public) {
		t.Fatalf("PublicKeys = %+v", got)
	}
}
