package dpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// sigCase is one algorithm with a signing key.
type sigCase struct {
	alg string
	key crypto.Signer
}

func sigCases(t testing.TB) []sigCase {
	t.Helper()
	ec := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, ek, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return []sigCase{
		{ES256, ec(elliptic.P256())}, {ES384, ec(elliptic.P384())}, {ES512, ec(elliptic.P521())},
		{RS256, rk}, {RS384, rk}, {RS512, rk}, {PS256, rk}, {PS384, rk}, {PS512, rk},
		{EdDSA, ek},
	}
}

// joseSign signs payload with go-jose and returns the compact JWS.
func joseSign(t testing.TB, c sigCase, payload []byte) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(c.alg), Key: c.key},
		(&jose.SignerOptions{EmbedJWK: true}).WithType(ProofType))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// agree reports whether verifySignature and go-jose give the same answer
// for a compact JWS (header, payload, signature) under key and alg.
func agree(t testing.TB, alg string, pub crypto.PublicKey, compact string) (fast, viaJose bool) {
	t.Helper()
	i := strings.LastIndexByte(compact, '.')
	sig, err := base64.RawURLEncoding.DecodeString(compact[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	fast = verifySignature(alg, pub, compact[:i], sig)
	obj, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = obj.Verify(pub)
	return fast, err == nil
}

// TestVerifySignatureMatchesGoJose holds the known-header fast path to
// go-jose's verdict for every algorithm, on genuine and damaged signatures.
func TestVerifySignatureMatchesGoJose(t *testing.T) {
	t.Parallel()
	for _, c := range sigCases(t) {
		t.Run(c.alg, func(t *testing.T) {
			t.Parallel()
			compact := joseSign(t, c, []byte(`{"jti":"a","htm":"POST","htu":"https://h/x","iat":1}`))
			i := strings.LastIndexByte(compact, '.')
			sig, _ := base64.RawURLEncoding.DecodeString(compact[i+1:])
			variants := map[string]string{"genuine": compact}
			for name, s := range map[string][]byte{
				"first byte flipped": flipByte(sig, 0),
				"last byte flipped":  flipByte(sig, len(sig)-1),
				"truncated":          sig[:len(sig)-1],
				"extended":           append(append([]byte{}, sig...), 0),
				"empty":              {},
				"zeros":              make([]byte, len(sig)),
			} {
				variants[name] = compact[:i+1] + base64.RawURLEncoding.EncodeToString(s)
			}
			other := joseSign(t, c, []byte(`{"jti":"b"}`))
			variants["other payload"] = compact[:strings.IndexByte(compact, '.')] + other[strings.IndexByte(other, '.'):]
			for name, v := range variants {
				fast, viaJose := agree(t, c.alg, c.key.Public(), v)
				if fast != viaJose {
					t.Errorf("%s: fast path says %v, go-jose says %v", name, fast, viaJose)
				}
				if name == "genuine" && !fast {
					t.Errorf("genuine signature refused")
				}
			}
			if verifySignature(c.alg, c.key.Public(), compact[:i], nil) {
				t.Error("nil signature accepted")
			}
		})
	}
}

func TestVerifySignatureRefusesWrongPairs(t *testing.T) {
	t.Parallel()
	cases := sigCases(t)
	compact := joseSign(t, cases[0], []byte(`{}`))
	i := strings.LastIndexByte(compact, '.')
	sig, _ := base64.RawURLEncoding.DecodeString(compact[i+1:])
	for _, alg := range []string{ES384, RS256, EdDSA, "HS256", "none", ""} {
		if verifySignature(alg, cases[0].key.Public(), compact[:i], sig) {
			t.Errorf("ES256 signature accepted as %q", alg)
		}
	}
	if verifySignature(ES256, []byte("secret"), compact[:i], sig) {
		t.Error("symmetric key accepted")
	}
}

func flipByte(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x01
	return out
}

// FuzzVerifySignatureMatchesGoJose feeds signatures damaged by a fuzzed mask
// and payloads chosen by the fuzzer: the fast path and go-jose must agree.
func FuzzVerifySignatureMatchesGoJose(f *testing.F) {
	cases := sigCases(f)
	f.Add([]byte(`{"jti":"x"}`), []byte{}, uint8(0), uint16(0))
	f.Add([]byte(`{}`), []byte{1}, uint8(3), uint16(1))
	f.Add([]byte(`payload`), []byte{0, 0, 0x80}, uint8(9), uint16(0))
	f.Fuzz(func(t *testing.T, payload, mask []byte, which uint8, cut uint16) {
		if len(payload) == 0 || len(payload) > 512 {
			return
		}
		c := cases[int(which)%len(cases)]
		compact := joseSign(t, c, payload)
		i := strings.LastIndexByte(compact, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(compact[i+1:])
		for j, m := range mask {
			if j < len(sig) {
				sig[j] ^= m
			}
		}
		if int(cut) < len(sig) && cut > 0 {
			sig = sig[:len(sig)-int(cut)]
		}
		damaged := compact[:i+1] + base64.RawURLEncoding.EncodeToString(sig)
		fast, viaJose := agree(t, c.alg, c.key.Public(), damaged)
		if fast != viaJose {
			t.Fatalf("%s: fast path says %v, go-jose says %v", c.alg, fast, viaJose)
		}
	})
}

// BenchmarkVerifyGoJoseSignature is BenchmarkVerify with go-jose's
// DetachedVerify checking every signature, known header or not: the cost of
// a validation without the fast path.
func BenchmarkVerifyGoJoseSignature(b *testing.B) {
	now := time.Now()
	clock := func() time.Time { return now }
	p, err := NewProver(ProverConfig{Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewVerifier(VerifierConfig{Now: clock, MaxReplayEntries: b.N + 16})
	if err != nil {
		b.Fatal(err)
	}
	v.joseOnly = true
	req := Request{Method: "POST", URL: "https://mcp.example.com/mcp", AccessToken: "access-token"}
	proofs := make([]string, b.N+1)
	for i := range proofs {
		if proofs[i], err = p.Proof(req); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := v.Verify(ctx, proofs[b.N], req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for i := range b.N {
		if _, err := v.Verify(ctx, proofs[i], req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
