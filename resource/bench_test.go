package resource_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// Benchmarks behind the figures in BENCHMARKS.md (resource section). Run:
//
//	go test -run '^$' -bench . -benchmem -count 10 ./resource > bench.txt
//	benchstat -col /impl bench.txt
//
// Every comparison is made within one run: fresh tokens through the whole
// middleware against a bare ecdsa.VerifyASN1 of the same signatures, cache
// hits against fresh tokens, the middleware against the official SDK's
// auth.RequireBearerToken with a straightforward go-jose verifier, and a
// per-tool policy against a default-only one.

// benchEnv is a Verifier plus tokens with realistic claims.
type benchEnv struct {
	key   *oauthtest.Key
	clock *oauthtest.Clock
	v     *resource.Verifier
}

func newBenchEnv(b *testing.B, policy *resource.Policy) *benchEnv {
	b.Helper()
	e := &benchEnv{key: oauthtest.NewKey(b, oauthtest.ES256, "k1"), clock: oauthtest.NewClock(oauthtest.Epoch())}
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: e.key.Public()}}}},
		Policy:   policy,
		Now:      e.clock.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	e.v = v
	return e
}

// tokens mints n distinct RFC 9068 tokens (distinct jti), valid far into
// the future so that the SDK's own time.Now check accepts them too.
func (e *benchEnv) tokens(b *testing.B, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = e.key.Mint(b, oauthtest.AccessToken{
			Issuer: testIssuer, Subject: "user-1234", Audience: []string{testResource}, ClientID: "host-app",
			Scope: "mcp:tools files:read", ID: "jti-" + itoa(int64(i)),
			IssuedAt: e.clock.Now().Add(-time.Minute), Expiry: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		})
	}
	return out
}

// nopWriter is a ResponseWriter that allocates nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

// rewindBody is a request body that can be replayed without allocating.
type rewindBody struct{ bytes.Reader }

func (*rewindBody) Close() error { return nil }

// benchRequest is one reusable request; reset restores what the
// middleware consumed (the Authorization header, the body).
type benchRequest struct {
	req   *http.Request
	authz []string
	body  *rewindBody
	data  []byte
}

func newBenchRequest(token, body string) *benchRequest {
	br := &benchRequest{req: httptest.NewRequest(http.MethodPost, testResource, nil), data: []byte(body), body: &rewindBody{}}
	br.req.Header.Set("Content-Type", "application/json")
	br.req.Header.Set("Accept", "application/json, text/event-stream")
	br.authz = []string{"Bearer " + token}
	br.reset(br.authz[0])
	return br
}

// reset restores the request for the next round. authz is the whole
// Authorization value, built outside the timed loop.
func (br *benchRequest) reset(authz string) *http.Request {
	br.authz[0] = authz
	br.req.Header["Authorization"] = br.authz
	br.body.Reset(br.data)
	br.req.Body = br.body
	br.req.ContentLength = int64(len(br.data))
	return br.req
}

var okHandler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// precomputedSig is a token's signing-input hash and ASN.1 signature, what a
// bare ecdsa.VerifyASN1 of it needs.
type precomputedSig struct{ hash, sig []byte }

// precomputed computes precomputedSig for every token.
func precomputed(b *testing.B, toks []string) []precomputedSig {
	pres := make([]precomputedSig, len(toks))
	for i, tok := range toks {
		dot := strings.LastIndexByte(tok, '.')
		h := sha256.Sum256([]byte(tok[:dot]))
		sig, _ := base64.RawURLEncoding.DecodeString(tok[dot+1:])
		pres[i] = precomputedSig{h[:], asn1Signature(b, sig)}
	}
	return pres
}

// asn1Signature converts a JWS ES256 signature (r||s) to ASN.1 DER.
func asn1Signature(b *testing.B, sig []byte) []byte {
	out, err := asn1.Marshal(struct{ R, S *big.Int }{
		new(big.Int).SetBytes(sig[:32]),
		new(big.Int).SetBytes(sig[32:]),
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkFresh compares a fresh ES256 token through the whole middleware
// with a bare ecdsa.VerifyASN1 of the same signature (hash and ASN.1
// encoding precomputed): the physical floor. go-jose's own parse and
// verify, which the middleware cannot avoid, is measured beside them.
func BenchmarkFresh(b *testing.B) {
	e := newBenchEnv(b, nil)
	pub := e.key.Public().(*ecdsa.PublicKey)
	b.Run("impl=bare-VerifyASN1", func(b *testing.B) {
		toks := e.tokens(b, min(b.N, 4096))
		pres := precomputed(b, toks)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := pres[i%len(pres)]
			if !ecdsa.VerifyASN1(pub, p.hash, p.sig) {
				b.Fatal("verify")
			}
		}
	})
	b.Run("impl=go-jose-ParseSignedCompact+Verify", func(b *testing.B) {
		toks := e.tokens(b, min(b.N, 4096))
		algs := []jose.SignatureAlgorithm{jose.ES256}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			jws, err := jose.ParseSignedCompact(toks[i%len(toks)], algs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jws.Verify(pub); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=mcpauth-middleware", func(b *testing.B) {
		runFresh(b, func() http.Handler { return rebind(b, e, e).v.Middleware(okHandler) }, e.tokens(b, min(b.N, 4096)))
	})
}

// runFresh sends every token once per handler: after len(toks) requests
// it replaces the handler (an empty verified-token cache) with the timer
// stopped, so every request carries a token the handler has not seen and
// the live heap stays the same size as the references'.
func runFresh(b *testing.B, newHandler func() http.Handler, toks []string) {
	h := newHandler()
	w := &nopWriter{h: http.Header{}}
	br := newBenchRequest(toks[0], listBody)
	hdrs := bearer(toks)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 && i%len(toks) == 0 {
			b.StopTimer()
			h = newHandler()
			b.StartTimer()
		}
		h.ServeHTTP(w, br.reset(hdrs[i%len(hdrs)]))
	}
}

// bearer builds the Authorization values for toks.
func bearer(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = "Bearer " + t
	}
	return out
}

// rebind gives env a fresh Verifier (an empty cache) on e's key.
func rebind(b *testing.B, env, e *benchEnv) *benchEnv {
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: e.key.Public()}}}},
		Now:      e.clock.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{key: e.key, clock: e.clock, v: v}
}

// BenchmarkCacheHit: the same token again and again through the whole
// middleware.
func BenchmarkCacheHit(b *testing.B) {
	e := newBenchEnv(b, nil)
	tok := e.tokens(b, 1)[0]
	h := e.v.Middleware(okHandler)
	w := &nopWriter{h: http.Header{}}
	br := newBenchRequest(tok, listBody)
	authz := "Bearer " + tok
	h.ServeHTTP(w, br.reset(authz)) // warm the cache
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ServeHTTP(w, br.reset(authz))
	}
}

// BenchmarkCacheHitIdentity: BenchmarkCacheHit with a handler that reads
// the identity, which the middleware copies for the request on first use:
// mcpauth's TokenInfo (handler=TokenInfoFromContext), and go-sdk's
// auth.TokenInfo with the claims decoded into Extra, as the go-sdk's
// handler reads it on every request (handler=go-sdk-TokenInfo).
func BenchmarkCacheHitIdentity(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"handler=TokenInfoFromContext", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if resource.TokenInfoFromContext(r.Context()) == nil {
				b.Fatal("no identity")
			}
		})},
		{"handler=go-sdk-TokenInfo", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if auth.TokenInfoFromContext(r.Context()) == nil {
				b.Fatal("no identity")
			}
		})},
	} {
		b.Run(tt.name, func(b *testing.B) {
			e := newBenchEnv(b, nil)
			tok := e.tokens(b, 1)[0]
			h := e.v.Middleware(tt.h)
			w := &nopWriter{h: http.Header{}}
			br := newBenchRequest(tok, listBody)
			authz := "Bearer " + tok
			h.ServeHTTP(w, br.reset(authz))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, br.reset(authz))
			}
		})
	}
}

// sdkVerifier is what an SDK user writes today: go-jose parse, verify and
// validate, on every request.
func sdkVerifier(pub *ecdsa.PublicKey, now time.Time) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			return nil, auth.ErrInvalidToken
		}
		var c jwt.Claims
		var extra struct {
			Scope    string `json:"scope"`
			ClientID string `json:"client_id"`
		}
		if err := tok.Claims(pub, &c, &extra); err != nil {
			return nil, auth.ErrInvalidToken
		}
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: testIssuer, AnyAudience: jwt.Audience{testResource}, Time: now}, 30*time.Second); err != nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: strings.Fields(extra.Scope), Expiration: c.Expiry.Time(), UserID: c.Subject,
			Extra: map[string]any{"client_id": extra.ClientID}}, nil
	}
}

// BenchmarkVsSDK compares the middleware with the official SDK's
// auth.RequireBearerToken plus a straightforward go-jose verifier, on
// fresh tokens and on one repeated token.
func BenchmarkVsSDK(b *testing.B) {
	e := newBenchEnv(b, nil)
	pub := e.key.Public().(*ecdsa.PublicKey)
	sdk := auth.RequireBearerToken(sdkVerifier(pub, e.clock.Now()), &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: testPRM, Scopes: []string{"mcp:tools"}})(okHandler)
	ours := func(b *testing.B) http.Handler {
		return rebind(b, e, e).v.Middleware(okHandler)
	}
	run := func(b *testing.B, h http.Handler, toks []string) {
		w := &nopWriter{h: http.Header{}}
		br := newBenchRequest(toks[0], listBody)
		hdrs := bearer(toks)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.ServeHTTP(w, br.reset(hdrs[i%len(hdrs)]))
		}
	}
	b.Run("token=fresh/impl=sdk-RequireBearerToken", func(b *testing.B) {
		runFresh(b, func() http.Handler { return sdk }, e.tokens(b, min(b.N, 4096)))
	})
	b.Run("token=fresh/impl=mcpauth-middleware", func(b *testing.B) {
		runFresh(b, func() http.Handler { return ours(b) }, e.tokens(b, min(b.N, 4096)))
	})
	b.Run("token=repeated/impl=sdk-RequireBearerToken", func(b *testing.B) { run(b, sdk, e.tokens(b, 1)) })
	b.Run("token=repeated/impl=mcpauth-middleware", func(b *testing.B) { run(b, ours(b), e.tokens(b, 1)) })
}

// BenchmarkPolicyBody measures what per-tool rules cost: the same cache-hit
// request with a 1 KiB tools/call body, under a default-only policy (body
// not read) and under a per-tool policy (body read, scanned, restored).
func BenchmarkPolicyBody(b *testing.B) {
	body := policyBody1KiB(b)
	for _, tt := range []struct {
		name   string
		policy *resource.Policy
	}{
		{"policy=default-only", &resource.Policy{Default: []string{"mcp:tools"}}},
		{"policy=per-tool", perToolPolicy()},
	} {
		b.Run(tt.name, func(b *testing.B) {
			e := newBenchEnv(b, tt.policy)
			tok := e.tokens(b, 1)[0]
			h := e.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			w := &nopWriter{h: http.Header{}}
			br := newBenchRequest(tok, body)
			br.req.Header.Set("Mcp-Method", "tools/call")
			br.req.Header.Set("Mcp-Name", "write_file")
			br.req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			authz := "Bearer " + tok
			h.ServeHTTP(w, br.reset(authz))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, br.reset(authz))
			}
		})
	}
}

// policyBody1KiB is a 1024-byte tools/call request.
func policyBody1KiB(b *testing.B) string {
	head := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/srv/data/report.txt","content":"`
	tail := `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	body := head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail
	if len(body) != 1024 {
		b.Fatalf("body is %d bytes", len(body))
	}
	return body
}

func perToolPolicy() *resource.Policy {
	return &resource.Policy{Default: []string{"mcp:tools"},
		Tools:   map[string][]string{"write_file": {"files:read"}, "delete_file": {"files:admin"}},
		Methods: map[string][]string{"tools/list": {"mcp:read"}}}
}

// BenchmarkCacheMemory fills the verified-token cache to its default size
// with realistic tokens and reports the heap it holds (B/cache). Run with
// -benchtime 1x.
func BenchmarkCacheMemory(b *testing.B) {
	for _, tt := range []struct {
		name    string
		padding int // extra claim bytes, to model larger tokens
	}{{"token=typical", 0}, {"token=4KiB", 3000}, {"token=8KiB", 5700}} {
		b.Run(tt.name, func(b *testing.B) {
			e := newBenchEnv(b, nil)
			n := resource.DefaultCacheEntries
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var tokenBytes int
			for i := 0; i < n; i++ {
				c := oauthtest.AccessToken{Issuer: testIssuer, Subject: "user-" + itoa(int64(i)), Audience: []string{testResource},
					ClientID: "host-app", Scope: "mcp:tools files:read", ID: "jti-" + itoa(int64(i)),
					IssuedAt: e.clock.Now(), Expiry: e.clock.Now().Add(time.Hour)}
				if tt.padding > 0 {
					c.Extra = map[string]any{"groups": strings.Repeat("g", tt.padding)}
				}
				tok := e.key.Mint(b, c)
				tokenBytes += len(tok)
				if _, err := e.v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			b.ReportMetric(held/(1<<20), "MiB/cache")
			b.ReportMetric(float64(tokenBytes)/float64(n), "token-bytes")
			runtime.KeepAlive(e)
			for i := 0; i < b.N; i++ {
			}
		})
	}
}
