package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/internal/seal"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, seal.KeySize) }

func TestSealOpen(t *testing.T) {
	r, err := seal.NewRing(key(1))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(`{"d":"private"}`)
	sealed := r.Seal(secret, "signing-key:k1")
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed value contains the plaintext")
	}
	if got, err := r.Open(sealed, "signing-key:k1"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if bytes.Equal(sealed, r.Seal(secret, "signing-key:k1")) {
		t.Fatal("two seals of one value are equal: the nonce is not random")
	}

	rotated, err := seal.NewRing(key(2), key(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealed, "signing-key:k1"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("an old key in the ring does not open: %q, %v", got, err)
	}
	if _, err := r.Open(rotated.Seal(secret, "x"), "x"); !errors.Is(err, seal.ErrOpen) {
		t.Fatalf("a ring without the new key opened its value: %v", err)
	}

	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	cases := map[string]struct {
		v   []byte
		ctx string
	}{
		"other context": {sealed, "signing-key:k2"},
		"tampered":      {flipped, "signing-key:k1"},
		"truncated":     {sealed[:10], "signing-key:k1"},
		"empty":         {nil, "signing-key:k1"},
		"bad version":   {append([]byte{9}, sealed[1:]...), "signing-key:k1"},
	}
	for name, c := range cases {
		if _, err := r.Open(c.v, c.ctx); !errors.Is(err, seal.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, bad := range [][]byte{nil, key(1)[:31], append(key(1), 0)} {
		if _, err := seal.NewRing(bad); err == nil {
			t.Errorf("NewRing accepted a %d-byte key", len(bad))
		}
	}
	tests := []struct {
		in string
		ok bool
	}{
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", true},
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE", true},
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB", false},
		{"not base64!", false},
	}
	for _, tc := range tests {
		k, err := seal.ParseKey(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseKey(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if tc.ok && !bytes.Equal(k, key(1)) {
			t.Errorf("ParseKey(%q) = %x", tc.in, k)
		}
	}
}
