package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// Benchmarks behind the DPoP figures in BENCHMARKS.md (resource section):
//
//	go test -run '^$' -bench 'DPoP' -benchmem -count 10 ./resource > dpop.txt
//	benchstat dpop.txt

// dpopBenchEnv is a Verifier in DPoP allowed mode with a bearer token and
// a DPoP-bound token, both already in the verified-token cache, and a
// client key.
type dpopBenchEnv struct {
	*benchEnv
	prover         *dpop.Prover
	bearer, bound  string
	bearerH, dpopH string // Authorization values
}

func newDPoPBenchEnv(b *testing.B) *dpopBenchEnv {
	b.Helper()
	e := &dpopBenchEnv{benchEnv: &benchEnv{key: oauthtest.NewKey(b, oauthtest.ES256, "k1"), clock: oauthtest.NewClock(oauthtest.Epoch())}}
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: e.key.Public()}}}},
		Now:      e.clock.Now,
		DPoP:     resource.DPoPConfig{Mode: resource.DPoPAllowed},
	})
	if err != nil {
		b.Fatal(err)
	}
	e.v = v
	if e.prover, err = dpop.NewProver(dpop.ProverConfig{Now: e.clock.Now}); err != nil {
		b.Fatal(err)
	}
	claims := oauthtest.AccessToken{Issuer: testIssuer, Subject: "user-1234", Audience: []string{testResource}, ClientID: "host-app",
		Scope: "mcp:tools files:read", ID: "jti-b", IssuedAt: e.clock.Now().Add(-time.Minute), Expiry: e.clock.Now().Add(time.Hour)}
	e.bearer = e.key.Mint(b, claims)
	claims.ID, claims.Extra = "jti-d", map[string]any{"cnf": map[string]any{"jkt": e.prover.JKT()}}
	e.bound = e.key.Mint(b, claims)
	e.bearerH, e.dpopH = "Bearer "+e.bearer, "DPoP "+e.bound
	return e
}

// proofs returns n fresh proofs for POSTs to the resource with the bound
// token.
func (e *dpopBenchEnv) proofs(b *testing.B, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = mustProof(b, e.prover, dpop.Request{Method: http.MethodPost, URL: testResource, AccessToken: e.bound})
	}
	return out
}

// bareProofCheck is the reference: SHA-256 of the proof's signing input
// and one ecdsa.VerifyASN1 (the signature converted to ASN.1 beforehand),
// nothing else.
type bareProofCheck struct {
	input []byte
	sig   []byte
}

func newBareProofCheck(b *testing.B, proof string) bareProofCheck {
	dot := strings.LastIndexByte(proof, '.')
	raw, err := base64.RawURLEncoding.DecodeString(proof[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	return bareProofCheck{input: []byte(proof[:dot]), sig: asn1Signature(b, raw)}
}

func (c bareProofCheck) run(b *testing.B, pub *ecdsa.PublicKey) {
	h := sha256.Sum256(c.input)
	if !ecdsa.VerifyASN1(pub, h[:], c.sig) {
		b.Fatal("verify")
	}
}

// dpopRequest is a reusable request whose Authorization and DPoP headers
// are restored before each round (the middleware deletes both).
type dpopRequest struct {
	*benchRequest
	proof []string
}

func (r *dpopRequest) with(authz, proof string) *http.Request {
	req := r.reset(authz)
	if proof != "" {
		r.proof[0] = proof
		req.Header["Dpop"] = r.proof
	}
	return req
}

// BenchmarkPairedDPoP measures what DPoP costs the middleware, per
// iteration and on the same fresh proof: a bare SHA-256 plus
// ecdsa.VerifyASN1 of the proof's signature (the floor), the same request
// with a cached bearer token, the same request with a cached DPoP-bound
// token and the proof, and package dpop's Verify of an equal proof
// alone. x-extra is the median per-iteration ratio (DPoP request − bearer
// request) / bare verification: the target is at most 1.10, one signature
// verification plus 10 %.
func BenchmarkPairedDPoP(b *testing.B) {
	e := newDPoPBenchEnv(b)
	served := 0
	h := e.v.Middleware(countingHandler(&served))
	w := &nopWriter{h: http.Header{}}
	br := &dpopRequest{benchRequest: newBenchRequest(e.bearer, listBody), proof: []string{""}}
	warm := e.proofs(b, 1)[0]
	h.ServeHTTP(w, br.with(e.bearerH, ""))
	h.ServeHTTP(w, br.with(e.dpopH, warm)) // both tokens cached, the proof header known
	lib, err := dpop.NewVerifier(dpop.VerifierConfig{Now: e.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	pub := e.prover.PublicKey().(*ecdsa.PublicKey)
	libReq := dpop.Request{Method: http.MethodPost, URL: testResource, AccessToken: e.bound}
	if _, err := lib.Verify(context.Background(), warm, libReq); err != nil {
		b.Fatal(err)
	}
	var d [4]time.Duration
	var sum [4]time.Duration
	extra, lone := make([]float64, 0, b.N), make([]float64, 0, b.N)
	const batch = 512
	var proofs []string
	var bare []bareProofCheck
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % batch
		if k == 0 {
			b.StopTimer()
			proofs = e.proofs(b, batch)
			bare = bare[:0]
			for _, p := range proofs {
				bare = append(bare, newBareProofCheck(b, p))
			}
			b.StartTimer()
		}
		run := [4]func(){
			func() { bare[k].run(b, pub) },
			func() { h.ServeHTTP(w, br.with(e.bearerH, "")) },
			func() { h.ServeHTTP(w, br.with(e.dpopH, proofs[k])) },
			func() {
				if _, err := lib.Verify(context.Background(), proofs[k], libReq); err != nil {
					b.Fatal(err)
				}
			},
		}
		for j := range run {
			c := (i + j) % len(run)
			start := time.Now()
			run[c]()
			d[c] = time.Since(start)
		}
		for j := range d {
			sum[j] += d[j]
		}
		extra = append(extra, float64(d[2]-d[1])/float64(d[0]))
		lone = append(lone, float64(d[3])/float64(d[0]))
	}
	for j, name := range []string{"bare-verify", "bearer-cached", "dpop-cached", "dpop-Verify"} {
		b.ReportMetric(float64(sum[j].Nanoseconds())/float64(b.N), "ns/"+name)
	}
	if served != 2+2*b.N {
		b.Fatalf("%d of %d requests served", served, 2+2*b.N)
	}
	b.ReportMetric(median(extra), "x-extra")
	b.ReportMetric(median(lone), "x-dpop-Verify")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDPoPCacheHit: a DPoP request with a cached bound token and a
// fresh proof through the whole middleware (allocations and time), beside
// the same request with a cached bearer token.
func BenchmarkDPoPCacheHit(b *testing.B) {
	for _, scheme := range []string{"Bearer", "DPoP"} {
		b.Run("scheme="+scheme, func(b *testing.B) {
			e := newDPoPBenchEnv(b)
			served := 0
			h := e.v.Middleware(countingHandler(&served))
			w := &nopWriter{h: http.Header{}}
			br := &dpopRequest{benchRequest: newBenchRequest(e.bearer, listBody), proof: []string{""}}
			authz := e.bearerH
			var proofs []string
			if scheme == "DPoP" {
				authz, proofs = e.dpopH, e.proofs(b, b.N+1)
			} else {
				proofs = make([]string, b.N+1)
			}
			h.ServeHTTP(w, br.with(authz, proofs[b.N]))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, br.with(authz, proofs[i]))
			}
			b.StopTimer()
			if served != b.N+1 {
				b.Fatalf("%d of %d requests served", served, b.N+1)
			}
		})
	}
}

// countingHandler counts the requests the middleware let through.
func countingHandler(n *int) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { *n++ })
}
