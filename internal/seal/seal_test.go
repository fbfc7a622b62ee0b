package seal_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
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
		"other context":  {sealed, "signing-key:k2"},
		"tampered":       {flipped, "signing-key:k1"},
		"truncated":      {sealed[:10], "signing-key:k1"},
		"header only":    {sealed[:1+8], "signing-key:k1"},
		"cut in the tag": {sealed[:1+8+12+15], "signing-key:k1"},
		"empty":          {nil, "signing-key:k1"},
		"bad version":    {append([]byte{9}, sealed[1:]...), "signing-key:k1"},
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

// TestOpenStoredFormat: a value laid out as the format says (version, key
// ID, 12-byte nonce, AES-256-GCM ciphertext and tag over the header and
// the context), built here with crypto/cipher directly, opens: values that
// replicas stored under an earlier build stay readable.
func TestOpenStoredFormat(t *testing.T) {
	k := key(7)
	sum := sha256.Sum256(append([]byte("mcpauth seal key id\x00"), k...))
	head := append([]byte{1}, sum[:8]...)
	block, err := aes.NewCipher(k)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := bytes.Repeat([]byte{0x5a}, aead.NonceSize())
	const context = "upstream-tokens:g1"
	stored := aead.Seal(append(append([]byte(nil), head...), nonce...), nonce, []byte("secret"), append(append([]byte(nil), head...), context...))
	r, err := seal.NewRing(key(9), k)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Open(stored, context)
	if err != nil || string(got) != "secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := r.Open(stored, "upstream-tokens:g2"); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("another context: %v", err)
	}
	sealed := r.Seal([]byte("secret"), context)
	if len(sealed) != len(stored) || sealed[0] != 1 {
		t.Errorf("a new value is %d bytes with version %d, the stored format %d bytes with version 1", len(sealed), sealed[0], len(stored))
	}
}
