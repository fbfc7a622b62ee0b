package resource_test

import (
	"context"
	"crypto/ecdsa"
	"net/http"
	"slices"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// pairedTimer accumulates per-iteration timings of several candidates
// measured back to back in the same iteration, so that interference from
// other processes on a shared machine hits all of them alike. It reports
// the median of the per-iteration ratios against the first candidate.
type pairedTimer struct {
	names  []string
	totals []time.Duration
	ratios [][]float64
	deltas [][]float64
}

func newPairedTimer(names ...string) *pairedTimer {
	return &pairedTimer{names: names, totals: make([]time.Duration, len(names)),
		ratios: make([][]float64, len(names)), deltas: make([][]float64, len(names))}
}

// iteration runs each candidate once, in an order rotated by i, and
// records the times.
func (p *pairedTimer) iteration(i int, run ...func()) {
	d := make([]time.Duration, len(run))
	for k := range run {
		j := (i + k) % len(run)
		start := time.Now()
		run[j]()
		d[j] = time.Since(start)
	}
	for j := range run {
		p.totals[j] += d[j]
		if j > 0 && d[0] > 0 {
			p.ratios[j] = append(p.ratios[j], float64(d[j])/float64(d[0]))
			p.deltas[j] = append(p.deltas[j], float64(d[j]-d[0]))
		}
	}
}

func (p *pairedTimer) report(b *testing.B, withDelta bool) {
	for j, name := range p.names {
		b.ReportMetric(float64(p.totals[j].Nanoseconds())/float64(b.N), "ns/"+name)
		if j > 0 && len(p.ratios[j]) > 0 {
			b.ReportMetric(median(p.ratios[j]), "x-"+name)
			if withDelta {
				b.ReportMetric(median(p.deltas[j]), "Δns-"+name)
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	r := slices.Clone(v)
	slices.Sort(r)
	return r[len(r)/2]
}

// BenchmarkPairedFresh measures, in every iteration and on the same fresh
// token: a bare ecdsa.VerifyASN1 (the floor), go-jose's parse and verify,
// the official SDK's RequireBearerToken with a go-jose verifier, and the
// whole mcpauth middleware. x-NAME is the median per-iteration time ratio
// NAME / VerifyASN1.
func BenchmarkPairedFresh(b *testing.B) {
	e := newBenchEnv(b, nil)
	pub := e.key.Public().(*ecdsa.PublicKey)
	toks := e.tokens(b, min(b.N, 4096))
	pres := precomputed(b, toks)
	algs := []jose.SignatureAlgorithm{jose.ES256}
	sdk := auth.RequireBearerToken(sdkVerifier(pub, e.clock.Now()), &auth.RequireBearerTokenOptions{Scopes: []string{"mcp:tools"}})(okHandler)
	ours := rebind(b, e, e).v.Middleware(okHandler)
	w := &nopWriter{h: http.Header{}}
	brSDK, brOurs := newBenchRequest(toks[0], listBody), newBenchRequest(toks[0], listBody)
	hdrs := bearer(toks)
	p := newPairedTimer("VerifyASN1", "go-jose", "sdk", "mcpauth")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(toks)
		if i > 0 && k == 0 {
			ours = rebind(b, e, e).v.Middleware(okHandler) // an empty cache: every token fresh again
		}
		p.iteration(i,
			func() {
				if !ecdsa.VerifyASN1(pub, pres[k].hash, pres[k].sig) {
					b.Fatal("verify")
				}
			},
			func() {
				jws, err := jose.ParseSignedCompact(toks[k], algs)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := jws.Verify(pub); err != nil {
					b.Fatal(err)
				}
			},
			func() { sdk.ServeHTTP(w, brSDK.reset(hdrs[k])) },
			func() { ours.ServeHTTP(w, brOurs.reset(hdrs[k])) },
		)
	}
	p.report(b, false)
}

// BenchmarkPairedFreshStages splits the middleware's share over go-jose
// into stages, each candidate adding one to the one before, all on the same
// fresh token in every iteration (x-NAME is NAME / VerifyASN1 as in
// BenchmarkPairedFresh): go-jose's parse and verify; the same with the
// claims decoded (go-json-experiment, internal/jwtverify); every token
// check (Verifier.verifyJWT: header, claims, issuer, times, audience,
// scope, key lookup); the same with the verified-token cache's lookup and
// insert; the whole middleware (credential parsing, the handler's request
// copy and header map, session binding).
func BenchmarkPairedFreshStages(b *testing.B) {
	e := newBenchEnv(b, nil)
	pub := e.key.Public().(*ecdsa.PublicKey)
	toks := e.tokens(b, min(b.N, 4096))
	pres := precomputed(b, toks)
	algs := []jose.SignatureAlgorithm{jose.ES256}
	joseRun := func(tok string, decode bool) {
		jws, err := jose.ParseSignedCompact(tok, algs)
		if err != nil {
			b.Fatal(err)
		}
		if decode {
			if err := resource.DecodeAccessClaims(jws.UnsafePayloadWithoutVerification()); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := jws.Verify(pub); err != nil {
			b.Fatal(err)
		}
	}
	checks, cached := rebind(b, e, e).v, rebind(b, e, e).v
	ours := rebind(b, e, e).v.Middleware(okHandler)
	ctx := context.Background()
	w := &nopWriter{h: http.Header{}}
	br := newBenchRequest(toks[0], listBody)
	hdrs := bearer(toks)
	p := newPairedTimer("VerifyASN1", "go-jose", "claims", "checks", "cache", "mcpauth")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(toks)
		if i > 0 && k == 0 {
			cached = rebind(b, e, e).v
			ours = rebind(b, e, e).v.Middleware(okHandler)
		}
		p.iteration(i,
			func() {
				if !ecdsa.VerifyASN1(pub, pres[k].hash, pres[k].sig) {
					b.Fatal("verify")
				}
			},
			func() { joseRun(toks[k], false) },
			func() { joseRun(toks[k], true) },
			func() {
				if err := checks.VerifyUncached(ctx, toks[k]); err != nil {
					b.Fatal(err)
				}
			},
			func() {
				if err := cached.VerifyShaped(ctx, toks[k]); err != nil {
					b.Fatal(err)
				}
			},
			func() { ours.ServeHTTP(w, br.reset(hdrs[k])) },
		)
	}
	p.report(b, false)
}

// BenchmarkPairedRepeated does the same for one token sent again and
// again: x-mcpauth is mcpauth / SDK.
func BenchmarkPairedRepeated(b *testing.B) {
	e := newBenchEnv(b, nil)
	pub := e.key.Public().(*ecdsa.PublicKey)
	tok := e.tokens(b, 1)[0]
	sdk := auth.RequireBearerToken(sdkVerifier(pub, e.clock.Now()), &auth.RequireBearerTokenOptions{Scopes: []string{"mcp:tools"}})(okHandler)
	ours := e.v.Middleware(okHandler)
	w := &nopWriter{h: http.Header{}}
	br := newBenchRequest(tok, listBody)
	authz := "Bearer " + tok
	ours.ServeHTTP(w, br.reset(authz))
	p := newPairedTimer("sdk", "mcpauth")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.iteration(i,
			func() { sdk.ServeHTTP(w, br.reset(authz)) },
			func() { ours.ServeHTTP(w, br.reset(authz)) },
		)
	}
	p.report(b, false)
}

// BenchmarkPairedPolicyBody measures what per-tool rules add for a 1 KiB
// tools/call body: the same cache-hit request through a default-only
// policy (body untouched) and a per-tool policy (body read, scanned,
// checked against Mcp-Method/Mcp-Name, restored). Δns-per-tool is the
// median per-iteration difference.
func BenchmarkPairedPolicyBody(b *testing.B) {
	body := policyBody1KiB(b)
	mk := func(p *resource.Policy) (http.Handler, *benchRequest, string) {
		e := newBenchEnv(b, p)
		tok := e.tokens(b, 1)[0]
		br := newBenchRequest(tok, body)
		br.req.Header.Set("Mcp-Method", "tools/call")
		br.req.Header.Set("Mcp-Name", "write_file")
		br.req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		return e.v.Middleware(okHandler), br, "Bearer " + tok
	}
	hDef, brDef, aDef := mk(&resource.Policy{Default: []string{"mcp:tools"}})
	hTool, brTool, aTool := mk(perToolPolicy())
	w := &nopWriter{h: http.Header{}}
	hDef.ServeHTTP(w, brDef.reset(aDef))
	hTool.ServeHTTP(w, brTool.reset(aTool))
	p := newPairedTimer("default-only", "per-tool")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.iteration(i,
			func() { hDef.ServeHTTP(w, brDef.reset(aDef)) },
			func() { hTool.ServeHTTP(w, brTool.reset(aTool)) },
		)
	}
	p.report(b, true)
}

// BenchmarkPairedProfiled measures what a token profile costs on a fresh
// token: the same RFC 9068 tokens through the middleware of a Verifier
// whose issuer has no profile (RFC 9068's own decode path) and of one whose
// issuer has a profile that reads the same claims (every member kept,
// read by claim paths). Δns-profiled is the median per-iteration
// difference.
func BenchmarkPairedProfiled(b *testing.B) {
	e := newBenchEnv(b, nil)
	toks := e.tokens(b, min(b.N, 4096))
	mk := func(p resource.Profile) http.Handler {
		v, err := resource.New(resource.Config{
			Resource: testResource,
			Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: e.key.Public()}}, Profile: p}},
			Now:      e.clock.Now,
		})
		if err != nil {
			b.Fatal(err)
		}
		return v.Middleware(okHandler)
	}
	profile := resource.Profile{Types: []string{resource.TypeAccessToken}, ScopeClaims: []string{"scope"}, ClientClaim: "client_id"}
	plain, profiled := mk(resource.Profile{}), mk(profile)
	w := &nopWriter{h: http.Header{}}
	brA, brB := newBenchRequest(toks[0], listBody), newBenchRequest(toks[0], listBody)
	hdrs := bearer(toks)
	p := newPairedTimer("rfc9068", "profiled")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(toks)
		if i > 0 && k == 0 {
			plain, profiled = mk(resource.Profile{}), mk(profile)
		}
		p.iteration(i,
			func() { plain.ServeHTTP(w, brA.reset(hdrs[k])) },
			func() { profiled.ServeHTTP(w, brB.reset(hdrs[k])) },
		)
	}
	p.report(b, true)
}
