package oauthtest_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

func TestMintVerifies(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{oauthtest.ES256, oauthtest.ES384, oauthtest.RS256, oauthtest.PS256, oauthtest.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			k := oauthtest.NewKey(t, alg, "kid-"+alg)
			tok := k.Mint(t, oauthtest.AccessToken{Issuer: "https://as", Audience: []string{"https://rs/mcp"}, Expiry: oauthtest.Epoch().Add(time.Hour)})
			jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
			if err != nil {
				t.Fatal(err)
			}
			h := jws.Signatures[0].Protected
			if h.KeyID != "kid-"+alg || h.ExtraHeaders["typ"] != "at+jwt" {
				t.Errorf("header %+v", h)
			}
			payload, err := jws.Verify(k.Public())
			if err != nil {
				t.Fatal(err)
			}
			var c map[string]any
			if err := json.Unmarshal(payload, &c); err != nil || c["aud"] != "https://rs/mcp" || c["exp"] != float64(oauthtest.Epoch().Add(time.Hour).Unix()) {
				t.Errorf("claims %v %v", c, err)
			}
		})
	}
}

func TestUnsignedAndHMAC(t *testing.T) {
	t.Parallel()
	if tok := oauthtest.Unsigned(t, map[string]any{"typ": "at+jwt"}, []byte(`{}`)); tok[len(tok)-1] != '.' {
		t.Errorf("unsigned token %q", tok)
	}
	tok := oauthtest.HMAC(t, make([]byte, 32), oauthtest.Header{}, []byte(`{}`))
	if _, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.HS256}); err != nil {
		t.Error(err)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	c := oauthtest.NewClock(oauthtest.Epoch())
	c.Advance(time.Minute)
	if !c.Now().Equal(oauthtest.Epoch().Add(time.Minute)) {
		t.Error(c.Now())
	}
}

func TestJWKSServer(t *testing.T) {
	t.Parallel()
	k := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	s := oauthtest.NewJWKSServer(t, k)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.TLSConfig()}, Timeout: 5 * time.Second}
	get := func(u string, v any) int {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if v != nil {
			_ = json.NewDecoder(resp.Body).Decode(v)
		}
		return resp.StatusCode
	}
	var set jose.JSONWebKeySet
	if get(s.JWKSURI, &set) != 200 || len(set.Keys) != 1 || set.Keys[0].KeyID != "k1" {
		t.Errorf("set %+v", set)
	}
	var md map[string]any
	if get(s.Issuer+oauthtest.MetadataPath, &md) != 200 || md["jwks_uri"] != s.JWKSURI || md["issuer"] != s.Issuer {
		t.Errorf("metadata %v", md)
	}
	s.SetStatus(500)
	if get(s.JWKSURI, nil) != 500 {
		t.Error("status")
	}
	if s.JWKSFetches() != 2 || s.MetadataFetches() != 1 {
		t.Errorf("counters %d %d", s.JWKSFetches(), s.MetadataFetches())
	}
	var _ *tls.Config = s.TLSConfig()
}

// TestSignRaw: hand-built JWS verify with go-jose for every key type, and
// DecodeJWS returns what was signed.
func TestSignRaw(t *testing.T) {
	t.Parallel()
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	tests := []struct {
		name string
		alg  jose.SignatureAlgorithm
		key  crypto.Signer
	}{
		{"ES256", jose.ES256, oauthtest.FixedP256(t, 3)},
		{"ES384", jose.ES384, oauthtest.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))},
		{"RS256", jose.RS256, rsaKey},
		{"PS256", jose.PS256, rsaKey},
		{"EdDSA", jose.EdDSA, oauthtest.NewKey(t, oauthtest.EdDSA, "k").Signer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hdr := oauthtest.Apply(map[string]any{"alg": string(tt.alg), "kid": "x"}, map[string]any{"kid": oauthtest.Absent{}})
			jws := oauthtest.SignRaw(t, tt.key, hdr, map[string]any{"sub": "s"})
			obj, err := jose.ParseSigned(jws, []jose.SignatureAlgorithm{tt.alg})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obj.Verify(tt.key.Public()); err != nil {
				t.Fatalf("verify: %v", err)
			}
			h, c := oauthtest.DecodeJWS(t, jws)
			if h["kid"] != nil || h["alg"] != string(tt.alg) || c["sub"] != "s" {
				t.Fatalf("decoded %v %v", h, c)
			}
		})
	}
}
