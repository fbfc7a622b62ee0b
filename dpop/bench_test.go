package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/dpop"
)

// The benchmarks compare a full DPoP proof validation with the bare
// signature check it cannot avoid (ecdsa.VerifyASN1 over the same proof's
// signing input). Every signature goes through go-jose, which re-decodes the
// protected header and converts the signature on each call; that floor
// (BenchmarkJoseDetachedVerify) is itself about 1.09–1.12 times the bare
// check, and Verify adds about 1–3 % to it (BENCHMARKS.md, section
// extensions).
//
//	go test -run '^$' -bench . -benchmem -count 10 ./dpop | tee /tmp/dpop.txt
//	benchstat /tmp/dpop.txt

const benchURL = "https://mcp.example.com/mcp"

func benchSetup(b *testing.B, n int) (*dpop.Verifier, []string, *ecdsa.PrivateKey) {
	b.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	p, err := dpop.NewProver(dpop.ProverConfig{Key: key, Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	v, err := dpop.NewVerifier(dpop.VerifierConfig{Now: clock, MaxReplayEntries: n + 16})
	if err != nil {
		b.Fatal(err)
	}
	proofs := make([]string, n)
	for i := range proofs {
		proofs[i], err = p.Proof(dpop.Request{Method: "POST", URL: benchURL, AccessToken: "access-token"})
		if err != nil {
			b.Fatal(err)
		}
	}
	return v, proofs, key
}

// BenchmarkVerify is a complete RFC 9449 §4.3 validation of a fresh proof
// (distinct jti each time) from a client whose key the verifier has seen.
func BenchmarkVerify(b *testing.B) {
	v, proofs, _ := benchSetup(b, b.N+1)
	ctx := context.Background()
	req := dpop.Request{Method: "POST", URL: benchURL, AccessToken: "access-token"}
	if _, err := v.Verify(ctx, proofs[b.N], req); err != nil { // warm the key cache
		b.Fatal(err)
	}
	t := startCPU(b)
	for i := range b.N {
		if _, err := v.Verify(ctx, proofs[i], req); err != nil {
			b.Fatal(err)
		}
	}
	t.stop(b)
}

// BenchmarkBareSignature is the reference: SHA-256 of the signing input and
// one ECDSA P-256 verification of the proof's signature, nothing else.
func BenchmarkBareSignature(b *testing.B) {
	_, proofs, key := benchSetup(b, 1)
	input, sig := signingInput(b, proofs[0])
	t := startCPU(b)
	for range b.N {
		h := sha256.Sum256(input)
		if !ecdsa.VerifyASN1(&key.PublicKey, h[:], sig) {
			b.Fatal("signature does not verify")
		}
	}
	t.stop(b)
}

// BenchmarkVerifyNewKey validates proofs whose header the verifier has not
// seen (a new client key each time): the worst case, with a header parse and
// thumbprint per proof.
func BenchmarkVerifyNewKey(b *testing.B) {
	const keys = 64
	ctx := context.Background()
	req := dpop.Request{Method: "POST", URL: benchURL}
	now := time.Now()
	clock := func() time.Time { return now }
	provers := make([]*dpop.Prover, keys)
	for i := range provers {
		p, err := dpop.NewProver(dpop.ProverConfig{Now: clock})
		if err != nil {
			b.Fatal(err)
		}
		provers[i] = p
	}
	proofs := make([]string, b.N)
	for i := range proofs {
		var err error
		if proofs[i], err = provers[i%keys].Proof(req); err != nil {
			b.Fatal(err)
		}
	}
	v, err := dpop.NewVerifier(dpop.VerifierConfig{Now: clock, KeyCacheSize: 1, MaxReplayEntries: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	t := startCPU(b)
	for i := range b.N {
		if _, err := v.Verify(ctx, proofs[i], req); err != nil {
			b.Fatal(err)
		}
	}
	t.stop(b)
}

// BenchmarkProof measures building one proof (ES256).
func BenchmarkProof(b *testing.B) {
	p, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		b.Fatal(err)
	}
	req := dpop.Request{Method: "POST", URL: benchURL, AccessToken: "access-token"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Proof(req); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTimer reports the process CPU time per operation as "cpu-ns/op" (see
// dpop.ProcessCPU).
type cpuTimer struct{ start time.Duration }

func startCPU(b *testing.B) *cpuTimer {
	b.ReportAllocs()
	b.ResetTimer()
	return &cpuTimer{start: dpop.ProcessCPU()}
}

func (t *cpuTimer) stop(b *testing.B) {
	b.StopTimer()
	b.ReportMetric(float64(dpop.ProcessCPU()-t.start)/float64(b.N), "cpu-ns/op")
}

// signingInput returns the JWS signing input and the ASN.1 form of the
// raw (r||s) ES256 signature of a compact proof.
func signingInput(b *testing.B, proof string) ([]byte, []byte) {
	b.Helper()
	i := strings.LastIndexByte(proof, '.')
	raw, err := base64.RawURLEncoding.DecodeString(proof[i+1:])
	if err != nil || len(raw) != 64 {
		b.Fatalf("bad signature segment: %v", err)
	}
	der, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])})
	if err != nil {
		b.Fatal(err)
	}
	return []byte(proof[:i]), der
}

// BenchmarkJoseDetachedVerify is the floor under the go-jose rule: only
// go-jose's DetachedVerify of the proof's signature (header parsed once,
// payload decoded once, outside the loop), with no DPoP check at all.
// Verify cannot cost less than this; the gap between the two is what the
// package itself adds.
func BenchmarkJoseDetachedVerify(b *testing.B) {
	_, proofs, key := benchSetup(b, 1)
	obj, err := jose.ParseSignedCompact(proofs[0], []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		b.Fatal(err)
	}
	payload := obj.UnsafePayloadWithoutVerification()
	t := startCPU(b)
	for range b.N {
		if err := obj.DetachedVerify(payload, &key.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
	t.stop(b)
}
