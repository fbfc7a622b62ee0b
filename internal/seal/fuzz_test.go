package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/internal/seal"
)

// FuzzParseKey: any string is a 32-byte key or an error, never a panic.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "", "AAAA", "!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := seal.ParseKey(s)
		if err == nil && len(k) != seal.KeySize {
			t.Fatalf("ParseKey(%q) = %d bytes", s, len(k))
		}
	})
}

// FuzzOpen: a stored value that the ring did not seal for this context
// never opens and never panics.
func FuzzOpen(f *testing.F) {
	r, err := seal.NewRing(bytes.Repeat([]byte{1}, seal.KeySize))
	if err != nil {
		f.Fatal(err)
	}
	good := r.Seal([]byte("secret"), "ctx")
	f.Add(bytes.Clone(good), "ctx")
	f.Add(bytes.Clone(good[:20]), "ctx")
	f.Add([]byte{1}, "")
	f.Fuzz(func(t *testing.T, v []byte, ctx string) {
		pt, err := r.Open(v, ctx)
		if err != nil {
			if !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("Open error %v is not ErrOpen", err)
			}
			return
		}
		// Only a value this key sealed for "ctx" opens (fuzzing workers
		// seal their own copy of good, with another nonce).
		if ctx != "ctx" || string(pt) != "secret" {
			t.Fatalf("a forged value opened: %x %q -> %q", v, ctx, pt)
		}
	})
}
