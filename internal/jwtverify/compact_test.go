package jwtverify

import (
	"errors"
	"strings"
	"testing"
)

func TestLooksLikeJWS(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"a.b.c", true}, {"aB-_0.b.", true}, {"a.b.c=", false}, {"a.b.c.d", false}, {".b.c", false},
		{"a..c", false}, {"a~b.c.d", false}, {"opaque+/token==", false}, {"a.b", false}, {"", false},
		{"a.b.c\xff", false}, {"a/b.c.d", false},
	} {
		if got := LooksLikeJWS(c.in); got != c.want {
			t.Errorf("LooksLikeJWS(%q) = %v", c.in, got)
		}
	}
}

func TestByteSetMatchesAlphabet(t *testing.T) {
	t.Parallel()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for c := 0; c < 256; c++ {
		want := strings.IndexByte(alphabet, byte(c)) >= 0
		// The byte alone and at every position of a 17-byte run (both
		// loops of ByteSet.All, each accumulator).
		for pos := -1; pos < 17; pos++ {
			s := string([]byte{byte(c)})
			if pos >= 0 {
				b := []byte(strings.Repeat("a", 17))
				b[pos] = byte(c)
				s = string(b)
			}
			if got := isBase64URL(s); got != want {
				t.Errorf("byte %#x at %d: %v, want %v", c, pos, got, want)
			}
		}
	}
}

func TestTypeIs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ, want string
		ok        bool
	}{
		{"at+jwt", "at+jwt", true}, {"AT+JWT", "at+jwt", true}, {"application/at+jwt", "at+jwt", true},
		{"Application/AT+jwt", "at+jwt", true}, {"jwt", "at+jwt", false}, {"application/", "at+jwt", false},
		{"", "at+jwt", false}, {"x/at+jwt", "at+jwt", false},
	} {
		if got := TypeIs(c.typ, c.want); got != c.ok {
			t.Errorf("TypeIs(%q, %q) = %v", c.typ, c.want, got)
		}
	}
}

func TestUnsafeWithoutVerification(t *testing.T) {
	t.Parallel()
	const tok = "eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJpc3MiOiJodHRwczovL2FzIiwic3ViIjoidSJ9.c2ln"
	var c Claims
	if err := UnsafeClaimsWithoutVerification(tok, &c); err != nil || c.Issuer != "https://as" || c.Subject != "u" {
		t.Fatalf("claims %+v, %v", c, err)
	}
	var h struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := UnsafeHeaderWithoutVerification(tok, &h); err != nil || h.Alg != "ES256" || h.Typ != "at+jwt" {
		t.Fatalf("header %+v, %v", h, err)
	}
	for _, bad := range []string{"a.b", "a.b.c.d", "e30.!!.x", "e30.W10.x", "e30.eyJhIjoxLCJhIjoyfQ.x"} {
		if err := UnsafeClaimsWithoutVerification(bad, &c); !errors.Is(err, ErrNotCompact) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if err := UnsafeHeaderWithoutVerification("!!.e30.x", &h); !errors.Is(err, ErrNotCompact) {
		t.Errorf("header: %v", err)
	}
}

// FuzzCompact feeds peer-controlled token strings to the compact-form
// helpers: Split must cut exactly at the two dots, LooksLikeJWS must agree
// with a byte-by-byte reference of the base64url alphabet (ByteSet.All is
// unrolled), and the unverified decoders must fail with ErrNotCompact or
// succeed only on a well-formed split, never panic.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{"a.b.c", "aB-_0.b.", "a.b.c.d", ".b.c", "a..c", "e30.e30.x", "e30.W10.x",
		"eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln", "abcdefgh.ijklmnopq.rstuvwxyz0123456789", "a.b.c\xff"} {
		f.Add(s)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	isB64 := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if strings.IndexByte(alphabet, s[i]) < 0 {
				return false
			}
		}
		return true
	}
	f.Fuzz(func(t *testing.T, raw string) {
		h, p, s, ok := Split(raw)
		parts := strings.Split(raw, ".")
		wantOK := len(parts) == 3 && parts[0] != "" && parts[1] != ""
		if ok != wantOK {
			t.Fatalf("Split(%q) ok = %v, want %v", raw, ok, wantOK)
		}
		if ok && (h != parts[0] || p != parts[1] || s != parts[2]) {
			t.Fatalf("Split(%q) = %q %q %q", raw, h, p, s)
		}
		if got, want := LooksLikeJWS(raw), ok && isB64(h) && isB64(p) && isB64(s); got != want {
			t.Fatalf("LooksLikeJWS(%q) = %v, want %v", raw, got, want)
		}
		var c Claims
		if err := UnsafeClaimsWithoutVerification(raw, &c); err != nil && !errors.Is(err, ErrNotCompact) {
			t.Fatalf("claims error %v does not match ErrNotCompact", err)
		} else if err == nil && !ok {
			t.Fatalf("claims decoded from %q, which Split refuses", raw)
		}
		var hdr map[string]any
		if err := UnsafeHeaderWithoutVerification(raw, &hdr); err != nil && !errors.Is(err, ErrNotCompact) {
			t.Fatalf("header error %v does not match ErrNotCompact", err)
		} else if err == nil && !ok {
			t.Fatalf("header decoded from %q, which Split refuses", raw)
		}
	})
}
