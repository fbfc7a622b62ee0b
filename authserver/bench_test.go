package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// benchServer is an in-memory server with the rate limiter on (at a rate
// the benchmark cannot reach), reached without a listener.
func benchServer(b *testing.B) *Server {
	b.Helper()
	s, err := New(Config{
		Issuer:    "https://as.example.com",
		Scopes:    []string{"mcp:read", "mcp:write"},
		Clients:   testClients(),
		Consent:   ConsentAuto,
		RateLimit: RateLimit{PerIP: 1e12, PerClient: 1e12, Burst: 1 << 30, PerIPBrowser: 1e12, BrowserBurst: 1 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// benchTokenRequests measures the token endpoint answering one request of
// each body with 200, and reports tokens per second.
func benchTokenRequests(b *testing.B, s *Server, bodies []string) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, tokenRequest(bodies[i]))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	reportTokens(b)
}

func reportTokens(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// codeExchangeBodies issues b.N authorization codes to the public client
// and returns the token request body that redeems each.
func codeExchangeBodies(b *testing.B, s *Server) []string {
	b.Helper()
	ctx := context.Background()
	client, _ := s.store.Clients.Client(ctx, publicID)
	verifier := pkce.GenerateVerifier()
	bodies := make([]string, b.N)
	for i := range bodies {
		code, err := s.issueCode(ctx, &authRequest{
			client: client, redirectURI: publicCB, redirectURISent: true, challenge: pkce.Challenge(verifier),
			scopes: []string{"mcp:read"}, resources: []string{testResource},
		})
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"client_id": {publicID}, "redirect_uri": {publicCB}, "resource": {testResource},
		}.Encode()
	}
	return bodies
}

// tokenRequest builds a request the way net/http's server hands one to a
// handler on a kept-alive connection (httptest.NewRequest would also parse
// the request line through a fresh bufio.Reader, a cost of the harness).
func tokenRequest(body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, "https://as.example.com/token", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = "127.0.0.1:40000"
	return req
}

// BenchmarkTokenCodeExchange measures the token endpoint redeeming an
// authorization code: form parsing, client lookup, PKCE, grant, code
// redemption, refresh token, ES256 JWT, JSON response.
func BenchmarkTokenCodeExchange(b *testing.B) {
	s := benchServer(b)
	bodies := codeExchangeBodies(b, s)
	benchTokenRequests(b, s, bodies)
}

// BenchmarkTokenRefresh measures the token endpoint rotating a refresh
// token: lookup, grant check, rotation, ES256 JWT, JSON response.
func BenchmarkTokenRefresh(b *testing.B) {
	s := benchServer(b)
	ctx := context.Background()
	now := s.clock.Now()
	bodies := make([]string, b.N)
	for i := range bodies {
		g := &Grant{ID: randomToken(16), ClientID: publicID, Subject: "u", Scopes: []string{"mcp:read"},
			Resources: []string{testResource}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		rt := randomToken(32)
		if err := s.store.Grants.SaveGrant(ctx, g); err != nil {
			b.Fatal(err)
		}
		if err := s.store.RefreshTokens.SaveRefreshToken(ctx, &RefreshToken{Key: tokenKey(rt), GrantID: g.ID, ClientID: publicID, IssuedAt: now, ExpiresAt: g.ExpiresAt}); err != nil {
			b.Fatal(err)
		}
		bodies[i] = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}.Encode()
	}
	benchTokenRequests(b, s, bodies)
}

// BenchmarkTokenClientCredentials measures the token endpoint answering a
// client_credentials grant with client_secret_basic, as mcpauth-load
// -authservers sends it: form parsing, the client's secret, the scope
// policy, the grant record, ES256 JWT, JSON response.
func BenchmarkTokenClientCredentials(b *testing.B) {
	s, err := New(Config{
		Issuer: "https://as.example.com",
		Scopes: []string{"mcp:read", "mcp:write"},
		Clients: []Client{{ID: "svc", Name: "Service", Secret: "svc-secret-for-the-benchmark",
			GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}, AllowedScopes: []string{"mcp:read"}}},
		RateLimit: RateLimit{PerIP: 1e12, PerClient: 1e12, Burst: 1 << 30, PerIPBrowser: 1e12, BrowserBurst: 1 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	body := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "scope": {"mcp:read"}}.Encode()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := tokenRequest(body)
		req.SetBasicAuth("svc", "svc-secret-for-the-benchmark")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	reportTokens(b)
}

// BenchmarkReferenceES256PlusStoreWrite is the floor the token endpoint is
// compared with: one ES256 JWS over access-token claims with go-jose, and
// one write to the in-memory store.
func BenchmarkReferenceES256PlusStoreWrite(b *testing.B) {
	reference := referenceOp(b, benchServer(b))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		reference(string(rune(i)))
	}
	reportTokens(b)
}

// referenceOp returns the operation the token endpoint is compared with:
// one ES256 JWS over access-token claims with go-jose, and one write of a
// refresh token stored under key to an in-memory store.
func referenceOp(b *testing.B, s *Server) func(key string) {
	b.Helper()
	ctx := context.Background()
	signing, err := s.keys.signingKey(ctx, s.clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := json.Marshal(accessClaims{
		Issuer: "https://as.example.com", Subject: "u", Audience: oauthmeta.Audience{testResource},
		ClientID: publicID, Scope: "mcp:read", IssuedAt: 1, Expires: 2, JTI: "grant.jti",
	})
	store := NewMemoryStore()
	now := s.clock.Now()
	return func(key string) {
		jws, err := signing.signer.Sign(payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jws.CompactSerialize(); err != nil {
			b.Fatal(err)
		}
		_ = store.SaveRefreshToken(ctx, &RefreshToken{Key: key, GrantID: "g", ClientID: publicID, IssuedAt: now, ExpiresAt: now})
	}
}

// BenchmarkTokenVsReference alternates one code exchange with one
// reference operation (ES256 JWS plus one store write) and reports the
// ratio of their times. Interleaving at this grain makes the ratio robust
// on a shared, noisy machine, where separate benchmarks drift apart.
func BenchmarkTokenVsReference(b *testing.B) {
	s := benchServer(b)
	bodies := codeExchangeBodies(b, s)
	op := referenceOp(b, s)
	var endpoint, reference time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, tokenRequest(bodies[i]))
		t1 := time.Now()
		op(bodies[i][:20])
		t2 := time.Now()
		endpoint += t1.Sub(t0)
		reference += t2.Sub(t1)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
	b.ReportMetric(float64(endpoint.Nanoseconds())/float64(b.N), "endpoint-ns/op")
	b.ReportMetric(float64(reference.Nanoseconds())/float64(b.N), "reference-ns/op")
	b.ReportMetric(float64(endpoint)/float64(reference), "ratio")
}
