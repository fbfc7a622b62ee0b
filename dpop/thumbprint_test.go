package dpop_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

func TestJKTVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, jwk, want string
	}{
		{
			name: "RFC 7638 §3.1",
			jwk:  `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`,
			want: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
		},
		{
			name: "RFC 9449 §4.1 proof key, cnf.jkt of §6.1",
			jwk:  `{"kty":"EC","x":"l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs","y":"9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA","crv":"P-256"}`,
			want: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var k jose.JSONWebKey
			if err := k.UnmarshalJSON([]byte(tt.jwk)); err != nil {
				t.Fatal(err)
			}
			got, err := dpop.JKT(k.Key)
			if err != nil || got != tt.want {
				t.Fatalf("JKT = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestJKTRejectsNonKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []any{nil, "key", []byte("secret")} {
		if _, err := dpop.JKT(k); err == nil {
			t.Fatalf("JKT(%T) succeeded", k)
		}
	}
	// Key types a proof may carry, but keys it may not: RSA under 2048
	// bits, a curve without a JWS algorithm.
	weak := oauthtest.Must(rsa.GenerateKey(rand.Reader, 1024))
	p224 := oauthtest.Must(ecdsa.GenerateKey(elliptic.P224(), rand.Reader))
	for name, k := range map[string]crypto.PublicKey{"RSA 1024": &weak.PublicKey, "P-224": &p224.PublicKey} {
		if _, err := dpop.JKT(k); err == nil {
			t.Fatalf("JKT(%s) succeeded", name)
		}
	}
}

func TestAccessTokenHashVector(t *testing.T) {
	t.Parallel()
	// RFC 9449 §7.1, Figures 12 and 13.
	const token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	if got, want := dpop.AccessTokenHash(token), "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"; got != want {
		t.Fatalf("AccessTokenHash = %q, want %q", got, want)
	}
}
