package dpop_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"io"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestProofGolden pins the decoded header and claims of a proof built with a
// fixed key, clock and jti source.
func TestProofGolden(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	p, err := dpop.NewProver(dpop.ProverConfig{
		Key:  oauthtest.FixedP256(t, 7),
		Now:  clk.Now,
		Rand: bytes.NewReader(bytes.Repeat([]byte{0xA5}, 64)),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  dpop.Request
	}{
		{"proof_resource.json", dpop.Request{Method: "POST", URL: "https://MCP.example.com:443/mcp?q=1#f", AccessToken: testToken, Nonce: "server-nonce"}},
		{"proof_token.json", dpop.Request{Method: "POST", URL: "https://as.example.com/token"}},
	}
	for _, tt := range tests {
		proof, err := p.Proof(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		hdr, claims := oauthtest.DecodeJWS(t, proof)
		golden.JSON(t, tt.name, map[string]any{"header": hdr, "claims": claims, "jkt": p.JKT()})
	}
}

func TestProverRoundTrip(t *testing.T) {
	t.Parallel()
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name    string
		key     crypto.Signer
		alg     string
		wantAlg string
	}{
		{"generated ES256 key", nil, "", "ES256"},
		{"P-384 key", oauthtest.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)), "", "ES384"},
		{"P-521 key", oauthtest.Must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader)), "", "ES512"},
		{"RSA key", rsaKey, "", "RS256"},
		{"RSA key with PS256", rsaKey, "PS256", "PS256"},
		{"Ed25519 key", edKey, "", "EdDSA"},
		{"opaque crypto.Signer", oauthtest.OpaqueSigner{Signer: oauthtest.FixedP256(t, 5)}, "", "ES256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := oauthtest.NewClock(t0())
			p, err := dpop.NewProver(dpop.ProverConfig{Key: tt.key, Algorithm: tt.alg, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			if p.Algorithm() != tt.wantAlg {
				t.Fatalf("Algorithm = %s, want %s", p.Algorithm(), tt.wantAlg)
			}
			v, err := dpop.NewVerifier(dpop.VerifierConfig{Now: clk.Now, Algorithms: []string{tt.wantAlg}})
			if err != nil {
				t.Fatal(err)
			}
			req := dpop.Request{Method: "POST", URL: testURL, AccessToken: testToken}
			for range 2 { // second time through the known-header path
				proof, err := p.Proof(req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := v.Verify(context.Background(), proof, req)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if got.JKT != p.JKT() {
					t.Fatalf("JKT = %s, want %s", got.JKT, p.JKT())
				}
			}
			if want, _ := dpop.JKT(p.PublicKey()); want != p.JKT() {
				t.Fatalf("JKT() = %s, JKT(PublicKey()) = %s", p.JKT(), want)
			}
		})
	}
}

func TestProofIsFreshEachTime(t *testing.T) {
	t.Parallel()
	p, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 50 {
		proof, err := p.Proof(dpop.Request{Method: "GET", URL: testURL})
		if err != nil {
			t.Fatal(err)
		}
		_, claims := oauthtest.DecodeJWS(t, proof)
		jti := claims["jti"].(string)
		if raw, _ := base64.RawURLEncoding.DecodeString(jti); len(raw)*8 < 96 {
			t.Fatalf("jti %q has fewer than 96 bits", jti)
		}
		if seen[jti] {
			t.Fatalf("jti %q repeated", jti)
		}
		seen[jti] = true
		if _, ok := claims["ath"]; ok {
			t.Fatal("ath present without an access token")
		}
	}
}

func TestNewProverRejects(t *testing.T) {
	t.Parallel()
	weak := oauthtest.Must(rsa.GenerateKey(rand.Reader, 1024))
	tests := []struct {
		name string
		cfg  dpop.ProverConfig
	}{
		{"HS256", dpop.ProverConfig{Algorithm: "HS256"}},
		{"none", dpop.ProverConfig{Algorithm: "none"}},
		{"alg for another key type", dpop.ProverConfig{Algorithm: "RS256"}},
		{"ES384 with a P-256 key", dpop.ProverConfig{Algorithm: "ES384"}},
		{"weak RSA key", dpop.ProverConfig{Key: weak}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := dpop.NewProver(tt.cfg); err == nil {
				t.Fatal("NewProver accepted a bad config")
			}
		})
	}
}

func TestProofRejectsBadRequest(t *testing.T) {
	t.Parallel()
	p, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  dpop.Request
	}{
		{"empty method", dpop.Request{URL: testURL}},
		{"method with space", dpop.Request{Method: "GE T", URL: testURL}},
		{"relative URL", dpop.Request{Method: "GET", URL: "/mcp"}},
		{"ftp URL", dpop.Request{Method: "GET", URL: "ftp://h/x"}},
		{"user info", dpop.Request{Method: "GET", URL: "https://u:p@h/x"}},
		{"nonce with a quote", dpop.Request{Method: "GET", URL: testURL, Nonce: `a"b`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Proof(tt.req); err == nil {
				t.Fatal("Proof accepted a bad request")
			}
		})
	}
}

func TestProofRandFailure(t *testing.T) {
	t.Parallel()
	p, err := dpop.NewProver(dpop.ProverConfig{Key: oauthtest.FixedP256(t, 1), Rand: bytes.NewReader(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Proof(dpop.Request{Method: "GET", URL: testURL}); !errors.Is(err, io.EOF) {
		t.Fatalf("Proof with an empty Rand = %v, want io.EOF", err)
	}
}
