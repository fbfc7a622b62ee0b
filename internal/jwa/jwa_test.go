package jwa_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwa"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	r2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	r1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	ed, _, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name    string
		pub     any
		alg     string
		wantErr error
	}{
		{"ES256 P-256", &p256.PublicKey, jwa.ES256, nil},
		{"ES384 P-384", &p384.PublicKey, jwa.ES384, nil},
		{"ES512 P-521", &p521.PublicKey, jwa.ES512, nil},
		{"ES256 P-384", &p384.PublicKey, jwa.ES256, jwa.ErrKeyMismatch},
		{"RS256 RSA", &r2048.PublicKey, jwa.RS256, nil},
		{"PS512 RSA", &r2048.PublicKey, jwa.PS512, nil},
		{"RS256 RSA-1024", &r1024.PublicKey, jwa.RS256, jwa.ErrUnsupportedKey},
		{"ES256 RSA", &r2048.PublicKey, jwa.ES256, jwa.ErrKeyMismatch},
		{"EdDSA Ed25519", ed, jwa.EdDSA, nil},
		{"ES256 Ed25519", ed, jwa.ES256, jwa.ErrKeyMismatch},
		{"HS256 bytes", []byte("secret"), "HS256", jwa.ErrUnsupportedKey},
		{"nil", nil, jwa.ES256, jwa.ErrUnsupportedKey},
		{"nil ECDSA", (*ecdsa.PublicKey)(nil), jwa.ES256, jwa.ErrUnsupportedKey},
		{"short Ed25519", ed25519.PublicKey{1, 2}, jwa.EdDSA, jwa.ErrUnsupportedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := jwa.CheckKey(tt.pub, tt.alg); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("CheckKey = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestAllowlist(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    string
		wantErr bool
	}{
		{name: "default", want: "[ES256]"},
		{name: "dedup", in: []string{"RS256", "ES256", "RS256"}, want: "[RS256 ES256]"},
		{name: "none refused", in: []string{"none"}, wantErr: true},
		{name: "HS256 refused", in: []string{"ES256", "HS256"}, wantErr: true},
		{name: "case matters", in: []string{"es256"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jwa.Allowlist(tt.in, []string{jwa.ES256})
			if tt.wantErr {
				if !errors.Is(err, jwa.ErrUnsupportedAlg) {
					t.Fatalf("Allowlist(%v) = %v, %v; want ErrUnsupportedAlg", tt.in, got, err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tt.want {
				t.Fatalf("Allowlist(%v) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestForKey(t *testing.T) {
	t.Parallel()
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	r, _ := rsa.GenerateKey(rand.Reader, 2048)
	ed, _, _ := ed25519.GenerateKey(rand.Reader)
	for pub, want := range map[any]string{&p384.PublicKey: jwa.ES384, &r.PublicKey: jwa.RS256, string(ed): ""} {
		got, err := jwa.ForKey(pub)
		if got != want || (want == "") != (err != nil) {
			t.Fatalf("ForKey(%T) = %q, %v; want %q", pub, got, err, want)
		}
	}
	if got, err := jwa.ForKey(ed); got != jwa.EdDSA || err != nil {
		t.Fatalf("ForKey(Ed25519) = %q, %v", got, err)
	}
}

func ExampleCheckKey() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fmt.Println(jwa.CheckKey(&key.PublicKey, jwa.ES256))
	fmt.Println(errors.Is(jwa.CheckKey(&key.PublicKey, jwa.RS256), jwa.ErrKeyMismatch))
	// Output:
	// <nil>
	// true
}

func ExampleAllowlist() {
	algs, err := jwa.Allowlist([]string{"ES256", "HS256"}, nil)
	fmt.Println(algs, errors.Is(err, jwa.ErrUnsupportedAlg))
	// Output: [] true
}

func ExampleForKey() {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	alg, _ := jwa.ForKey(&key.PublicKey)
	fmt.Println(alg)
	// Output: RS256
}

func ExampleSupported() {
	fmt.Println(jwa.Supported("EdDSA"), jwa.Supported("none"))
	// Output: true false
}

func ExampleCurve() {
	fmt.Println(jwa.Curve(jwa.ES384).Params().Name)
	// Output: P-384
}
