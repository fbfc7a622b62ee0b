package jwtassert_test

import (
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
)

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParsePrivateKeyPEM(t *testing.T) {
	t.Parallel()
	ec := oauthtest.FixedP256(t, 1)
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	weak := oauthtest.Must(rsa.GenerateKey(rand.Reader, 1024))
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	p224 := oauthtest.Must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader))
	x25519 := oauthtest.Must(ecdh.X25519().GenerateKey(rand.Reader))
	pkcs8 := func(k any) []byte { return oauthtest.Must(x509.MarshalPKCS8PrivateKey(k)) }
	sec1 := func(k *ecdsa.PrivateKey) []byte { return oauthtest.Must(x509.MarshalECPrivateKey(k)) }
	tests := []struct {
		name    string
		pem     []byte
		want    crypto.PublicKey
		wantErr bool
	}{
		{name: "PKCS #8 EC", pem: pemBlock("PRIVATE KEY", pkcs8(ec)), want: &ec.PublicKey},
		{name: "PKCS #8 RSA", pem: pemBlock("PRIVATE KEY", pkcs8(rsaKey)), want: &rsaKey.PublicKey},
		{name: "PKCS #8 Ed25519", pem: pemBlock("PRIVATE KEY", pkcs8(ed)), want: ed.Public()},
		{name: "SEC 1 EC", pem: pemBlock("EC PRIVATE KEY", sec1(ec)), want: &ec.PublicKey},
		{name: "SEC 1 EC after EC PARAMETERS", pem: append(pemBlock("EC PARAMETERS", []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}),
			pemBlock("EC PRIVATE KEY", sec1(ec))...), want: &ec.PublicKey},
		{name: "PKCS #1 RSA", pem: pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), want: &rsaKey.PublicKey},
		{name: "weak RSA", pem: pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(weak)), wantErr: true},
		{name: "PKCS #8 weak RSA", pem: pemBlock("PRIVATE KEY", pkcs8(weak)), wantErr: true},
		{name: "PKCS #8 X25519", pem: pemBlock("PRIVATE KEY", pkcs8(x25519)), wantErr: true},
		{name: "P-224", pem: pemBlock("EC PRIVATE KEY", sec1(p224)), wantErr: true},
		{name: "public key", pem: pemBlock("PUBLIC KEY", oauthtest.Must(x509.MarshalPKIXPublicKey(&ec.PublicKey))), wantErr: true},
		{name: "encrypted PKCS #8", pem: pemBlock("ENCRYPTED PRIVATE KEY", []byte{1, 2, 3}), wantErr: true},
		{name: "legacy encrypted PEM", pem: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY",
			Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}}), wantErr: true},
		{name: "garbage DER", pem: pemBlock("PRIVATE KEY", []byte("junk")), wantErr: true},
		{name: "not PEM", pem: []byte("-----BEGIN nothing"), wantErr: true},
		{name: "empty", wantErr: true},
		{name: "huge", pem: make([]byte, 70<<10), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jwtassert.ParsePrivateKeyPEM(tt.pem)
			if tt.wantErr {
				if !errors.Is(err, jwtassert.ErrPrivateKey) || got != nil {
					t.Fatalf("ParsePrivateKeyPEM = %T, %v; want ErrPrivateKey", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.want) {
				t.Fatal("parsed a different key")
			}
		})
	}
}

// TestJWKSCases runs the shared JWK Set table through the verifier: a set
// parsed by jwkset.Parse verifies an assertion signed by the row's signer
// exactly when the row says its key is usable; a refused set yields no keys.
func TestJWKSCases(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			keys, err := jwkset.Parse(tt.JWKS)
			if (err != nil) != tt.Refused {
				t.Fatalf("jwkset.Parse error = %v, want refused %v", err, tt.Refused)
			}
			e := newCAEnv(t, nil)
			assertion := e.assertion(map[string]any{"alg": tt.Signer.Algorithm, "kid": tt.Signer.ID, "_key": tt.Signer.Signer}, nil)
			_, err = e.v.Verify(context.Background(), assertion, clientID, keyset.Static(keys))
			if (err == nil) != tt.Verifies() {
				t.Fatalf("Verify error = %v, want accepted %v", err, tt.Verifies())
			}
		})
	}
}

// TestKeySelection checks which keys are tried for a kid and alg.
func TestKeySelection(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	signing := oauthtest.FixedP256(t, 3)
	decoy := oauthtest.FixedP256(t, 4)
	v, err := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{Audiences: []string{asIssuer}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &caEnv{t: t, clk: clk, key: signing, v: v}
	tests := []struct {
		name    string
		kid     any
		keys    keyset.Static
		wantErr error
	}{
		{"exact kid", "a", keyset.Static{{ID: "b", Public: &decoy.PublicKey}, {ID: "a", Public: &signing.PublicKey}}, nil},
		{"kid, key without ID", "a", keyset.Static{{Public: &signing.PublicKey}}, nil},
		{"no kid, several keys", oauthtest.Absent{}, keyset.Static{{ID: "x", Public: &decoy.PublicKey}, {ID: "y", Public: &signing.PublicKey}}, nil},
		{"kid of another key only", "a", keyset.Static{{ID: "b", Public: &signing.PublicKey}}, jwtverify.ErrUnknownKey},
		{"key restricted to another alg", "a", keyset.Static{{ID: "a", Algorithm: "ES384", Public: &signing.PublicKey}}, jwtverify.ErrUnknownKey},
		{"key restricted to the alg", "a", keyset.Static{{ID: "a", Algorithm: "ES256", Public: &signing.PublicKey}}, nil},
		{"right key beyond the try limit", oauthtest.Absent{}, keyset.Static{
			{Public: &decoy.PublicKey}, {Public: &decoy.PublicKey}, {Public: &decoy.PublicKey}, {Public: &decoy.PublicKey},
			{Public: &signing.PublicKey}}, jwtverify.ErrSignature},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.assertion(map[string]any{"kid": tt.kid}, map[string]any{"jti": fmt.Sprint("sel-", i)})
			_, err := v.Verify(context.Background(), a, clientID, tt.keys)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
