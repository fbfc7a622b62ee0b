package resource_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// FuzzVerify feeds random tokens to a Verifier with static keys: it never
// panics and never succeeds, and every failure has a class. The seeds are
// near misses: signed by another key, expired, wrong audience, alg none.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f, nil)
	attacker := oauthtest.NewKey(f, oauthtest.ES256, "k1")
	now := fx.clock.Now()
	valid := fx.claims()
	f.Add(attacker.Mint(f, valid))
	f.Add(fx.token(func(c *oauthtest.AccessToken) { c.Expiry = now.Add(-time.Hour) }))
	f.Add(fx.token(func(c *oauthtest.AccessToken) { c.Audience = []string{"https://other.example/mcp"} }))
	f.Add(fx.token(func(c *oauthtest.AccessToken) { c.Issuer = otherIssuer }))
	f.Add(fx.key.MintWith(f, oauthtest.Header{Type: "JWT"}, valid))
	f.Add(oauthtest.Unsigned(f, map[string]any{"typ": "at+jwt", "kid": "k1"}, oauthtest.MustJSON(f, valid.Claims())))
	f.Add(oauthtest.HMAC(f, []byte("0123456789abcdef0123456789abcdef"), oauthtest.Header{KeyID: "k1"}, oauthtest.MustJSON(f, valid.Claims())))
	f.Add("a.b.c")
	f.Add("opaque")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		info, err := fx.v.Verify(context.Background(), token)
		if err == nil || info != nil {
			t.Fatalf("fuzzed token accepted: %q", token)
		}
		if !errors.Is(err, resource.ErrInvalidToken) && !errors.Is(err, resource.ErrUnavailable) {
			t.Fatalf("error without a class: %v", err)
		}
		if len(token) > 8 && strings.Contains(err.Error(), token) {
			t.Fatal("error contains the token")
		}
	})
}

// FuzzMiddlewareAuthorization feeds random Authorization headers and
// bodies through the middleware: never a panic, never a 2xx, never a 500.
func FuzzMiddlewareAuthorization(f *testing.F) {
	fx := newFixture(f, func(c *resource.Config) { c.Policy = testPolicy() })
	f.Add("Bearer "+oauthtest.NewKey(f, oauthtest.ES256, "k1").Mint(f, fx.claims()), toolCall("write_file"))
	f.Add("bearer a b", `[{}]`)
	f.Add("Bearer", `{"method":"tools/call","params":{"name":"x"}}`)
	f.Add("Basic Zm9vOmJhcg==", "")
	f.Add("DPoP abc", `{`)
	f.Fuzz(func(t *testing.T, authz, body string) {
		req := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader(body))
		req.Header.Set("Authorization", authz)
		rec := httptest.NewRecorder()
		called := false
		fx.v.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).ServeHTTP(rec, req)
		if called || rec.Code < 400 || rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("Authorization %q: status %d, handler called %v", authz, rec.Code, called)
		}
	})
}

// FuzzParsePolicy: the policy parser never panics, and an accepted policy
// can be used.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(issuePolicy))
	f.Add([]byte(`{"implies":{"a":["b"],"b":["a"]}}`))
	f.Add([]byte(`{"tools":{"x":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := resource.ParsePolicy(data)
		if err != nil {
			if !errors.Is(err, resource.ErrInvalidConfig) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		key := oauthtest.NewKey(t, oauthtest.ES256, "k")
		if _, err := resource.New(resource.Config{Resource: testResource, Policy: p,
			Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k", Public: key.Public()}}}}}); err != nil {
			t.Fatalf("accepted policy refused by New: %v", err)
		}
	})
}

// FuzzDPoPRequest feeds random Authorization values, DPoP headers (none,
// one or two) and methods through the middleware with DPoP allowed and
// server nonces off: never a panic, a 500 or a malformed challenge, never
// the token in a response, and the handler runs only for an untouched
// seed proof presented once, with its own token.
func FuzzDPoPRequest(f *testing.F) {
	fx := newDPoPFixture(f, resource.DPoPAllowed, nil)
	valid := map[string]bool{}
	for range 3 {
		p := fx.proof(f, fx.bound)
		valid[p] = true
		f.Add("DPoP "+fx.bound, p, "", uint8(0))
	}
	some := fx.proof(f, fx.bound)
	f.Add("DPoP "+fx.bound, some, some, uint8(0))
	f.Add("Bearer "+fx.bound, some, "", uint8(0))
	f.Add("DPoP "+fx.bound, some[:len(some)/2], "", uint8(0))
	f.Add("DPoP "+fx.bound, some, "", uint8(1))
	f.Add("dpop x.y.z", "a.b.c", "", uint8(2))
	f.Add("DPoP", "", "", uint8(0))
	f.Add("DPoP "+fx.bound, strings.ReplaceAll(some, ".", ","), "", uint8(0))
	accepted := map[string]bool{}
	f.Fuzz(func(t *testing.T, authz, proof, second string, method uint8) {
		m := []string{http.MethodPost, http.MethodGet, http.MethodDelete, "PATCH"}[method%4]
		req := httptest.NewRequest(m, testResource, strings.NewReader(listBodyForFuzz))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authz)
		for _, p := range []string{proof, second} {
			if p != "" {
				req.Header.Add("DPoP", p)
			}
		}
		rec := httptest.NewRecorder()
		called := false
		fx.v.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })).ServeHTTP(rec, req)
		if called {
			if authz != "DPoP "+fx.bound || second != "" || !valid[proof] || accepted[proof] || m != http.MethodPost {
				t.Fatalf("accepted: %s %q with DPoP %q, %q", m, authz, proof, second)
			}
			accepted[proof] = true
			return
		}
		if rec.Code < 400 || rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("status %d", rec.Code)
		}
		if _, err := oauthmeta.ParseChallenges(rec.Header().Values("WWW-Authenticate")...); err != nil {
			t.Fatalf("malformed challenge %q: %v", rec.Header().Values("WWW-Authenticate"), err)
		}
		if strings.Contains(rec.Body.String()+strings.Join(rec.Header().Values("WWW-Authenticate"), ""), fx.bound) {
			t.Fatal("response echoes the token")
		}
	})
}

const listBodyForFuzz = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// FuzzParseStaticKeys: never panics; an error is ErrInvalidConfig, and an
// accepted set answers Keys for every key it holds.
func FuzzParseStaticKeys(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AA"}]}`))
	f.Add([]byte(`{"keys":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := resource.ParseStaticKeys(data)
		if err != nil {
			if !errors.Is(err, resource.ErrInvalidConfig) || keys != nil {
				t.Fatalf("ParseStaticKeys = %v, %v", keys, err)
			}
			return
		}
		for _, k := range keys {
			if k.Public == nil {
				t.Fatalf("key without a public key: %+v", k)
			}
			if got, err := keys.Keys(context.Background(), k.ID); err != nil || len(got) == 0 {
				t.Fatalf("Keys(%q) = %v, %v", k.ID, got, err)
			}
		}
	})
}
