package dpop_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// FuzzVerify feeds arbitrary proofs to a Verifier that already knows the
// seeds' header (so the known-header path is fuzzed too): Verify must never
// panic and never accept. The seeds are proofs that fail exactly one check.
func FuzzVerify(f *testing.F) {
	clk := oauthtest.NewClock(t0())
	key := oauthtest.FixedP256(f, 7)
	v, err := dpop.NewVerifier(dpop.VerifierConfig{Now: clk.Now, Algorithms: []string{"ES256", "RS256", "EdDSA"}})
	if err != nil {
		f.Fatal(err)
	}
	e := &env{t: f, clk: clk, key: key, v: v}
	if _, err := v.Verify(context.Background(), e.proof(nil, map[string]any{"jti": "primer"}), resourceReq()); err != nil {
		f.Fatal(err)
	}
	for _, over := range []map[string]any{
		{"htu": "https://other.example.com/mcp"},
		{"htm": "GET"},
		{"ath": "x"},
		{"iat": 1},
		{"jti": "primer"},
		{"jti": oauthtest.Absent{}},
		{"nonce": "n", "htm": "PUT"},
	} {
		f.Add(e.proof(nil, over))
	}
	f.Add(e.proof(map[string]any{"alg": "none"}, nil))
	f.Add(e.proof(map[string]any{"jwk": oauthtest.JWKMap(f, key)}, nil))
	f.Add(e.proof(map[string]any{"typ": "jwt"}, nil))
	f.Add(rfcProof)
	f.Add("")
	f.Add("..")
	f.Add("a.b.c")
	f.Add("eyJ9.e30.")
	f.Add(strings.Repeat("A", 9000))
	f.Fuzz(func(t *testing.T, proof string) {
		p, err := v.Verify(context.Background(), proof, resourceReq())
		if err == nil || p != nil {
			t.Fatalf("Verify accepted a fuzzed proof: %q", proof)
		}
	})
}

// FuzzNormalizeHTU: never panics; a result is absolute http(s) without query
// or fragment, and normalizing it again changes nothing.
func FuzzNormalizeHTU(f *testing.F) {
	for _, s := range []string{
		"https://h/x", "HTTP://H:80/a/./b/../c?q#f", "https://[::1]:443/%7e", "https://h:0/", "https://h/%zz",
		"https://h/a%2f..%2Fb", "http://h/..", "https://u@h/", "//h/x", "https:", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := dpop.NormalizeHTU(raw)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "https://") && !strings.HasPrefix(got, "http://") {
			t.Fatalf("NormalizeHTU(%q) = %q: not http(s)", raw, got)
		}
		if strings.ContainsAny(got, "?#") {
			t.Fatalf("NormalizeHTU(%q) = %q: query or fragment left", raw, got)
		}
		again, err := dpop.NormalizeHTU(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeHTU not idempotent: %q -> %q -> %q (%v)", raw, got, again, err)
		}
	})
}

// FuzzCheckNonce: only nonces the source minted are accepted.
func FuzzCheckNonce(f *testing.F) {
	clk := oauthtest.NewClock(t0())
	n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: []byte(strings.Repeat("k", 32)), Now: clk.Now})
	if err != nil {
		f.Fatal(err)
	}
	minted, _ := n.Nonce(context.Background())
	clk.Advance(-10 * time.Minute)
	old, _ := n.Nonce(context.Background())
	clk.Advance(10 * time.Minute)
	f.Add(minted[:31] + "B")
	f.Add(old)
	f.Add(strings.Repeat("A", 32))
	f.Add("")
	f.Fuzz(func(t *testing.T, nonce string) {
		if err := n.CheckNonce(context.Background(), nonce); err == nil && nonce != minted {
			t.Fatalf("CheckNonce accepted %q, which was never minted", nonce)
		}
	})
}

// FuzzProofFromHeader: never panics; a returned proof has no comma and no
// surrounding space.
func FuzzProofFromHeader(f *testing.F) {
	f.Add("a.b.c", "")
	f.Add("a.b.c, d.e.f", "")
	f.Add(" ", "x")
	f.Fuzz(func(t *testing.T, first, second string) {
		h := http.Header{}
		h.Add("DPoP", first)
		if second != "" {
			h.Add("DPoP", second)
		}
		got, err := dpop.ProofFromHeader(h)
		if err != nil {
			return
		}
		if second != "" || strings.Contains(got, ",") || got != strings.TrimSpace(got) || got == "" {
			t.Fatalf("ProofFromHeader(%q, %q) = %q", first, second, got)
		}
	})
}
