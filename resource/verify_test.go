package resource_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestVerifyJWT covers RS-07, RS-08, RS-09, RS-10 and RS-18: every bad
// input gets an error of class ErrInvalidToken with a specific reason, never
// a panic or success.
func TestVerifyJWT(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	now := f.clock.Now()
	attacker := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	// A server that must never be contacted: jku/x5u point at it.
	var attackerHits atomic.Int64
	evil := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { attackerHits.Add(1) }))
	t.Cleanup(evil.Close)

	valid := f.claims()
	payload := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name    string
		token   func() string
		wantErr error
	}{
		{"valid", func() string { return f.token(nil) }, nil},
		{"RS-08 audience array containing the resource", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{testResource, "https://x.example"} })
		}, nil},
		{"RS-08 audience in upper case", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{"HTTPS://MCP.EXAMPLE.COM/mcp"} })
		}, nil},
		{"RS-08 audience of another server", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{"https://other.example.com/mcp"} })
		}, resource.ErrAudience},
		{"RS-08 audience with trailing slash", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = []string{testResource + "/"} })
		}, resource.ErrAudience},
		{"RS-08 audience missing", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = nil })
		}, resource.ErrAudience},
		{"RS-08 audience as a number", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Audience = nil; c.Extra = map[string]any{"aud": 42} })
		}, resource.ErrMalformedToken},
		{"RS-09 issuer not configured but validly signed", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Issuer = otherIssuer })
		}, resource.ErrIssuer},
		{"RS-09 issuer with trailing slash", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Issuer = testIssuer + "/" })
		}, resource.ErrIssuer},
		{"RS-09 issuer missing", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Issuer = "" })
		}, resource.ErrIssuer},
		{"RS-10 alg none", func() string {
			return oauthtest.Unsigned(t, map[string]any{"typ": "at+jwt", "kid": "k1"}, oauthtest.MustJSON(t, valid.Claims()))
		}, resource.ErrAlgorithm},
		{"RS-10 HS256 with a secret", func() string {
			return oauthtest.HMAC(t, []byte("0123456789abcdef0123456789abcdef"), oauthtest.Header{KeyID: "k1"}, oauthtest.MustJSON(t, valid.Claims()))
		}, resource.ErrAlgorithm},
		{"RS-10 algorithm outside the allowlist", func() string {
			k := oauthtest.NewKey(t, oauthtest.ES384, "k1")
			return k.Mint(t, valid)
		}, resource.ErrAlgorithm},
		{"RS-10 wrong typ (ID token)", func() string {
			return f.key.MintWith(t, oauthtest.Header{Type: "JWT"}, oauthtest.AccessToken{
				Issuer: testIssuer, Subject: "user-1", Audience: []string{"client-1"},
				IssuedAt: now, Expiry: now.Add(time.Hour), Extra: map[string]any{"nonce": "n-1"}})
		}, resource.ErrTokenType},
		{"RS-10 typ JWT", func() string { return f.key.MintWith(t, oauthtest.Header{Type: "JWT"}, valid) }, resource.ErrTokenType},
		{"RS-10 typ missing", func() string { return f.key.MintWith(t, oauthtest.Header{OmitType: true}, valid) }, resource.ErrTokenType},
		{"RS-10 typ application/at+jwt", func() string {
			return f.key.MintWith(t, oauthtest.Header{Type: "application/at+jwt"}, valid)
		}, nil},
		{"RS-10 typ in upper case", func() string { return f.key.MintWith(t, oauthtest.Header{Type: "AT+JWT"}, valid) }, nil},
		{"RS-10 jku pointing to an attacker", func() string {
			return attacker.MintWith(t, oauthtest.Header{Extra: map[string]any{"jku": evil.URL + "/jwks"}}, valid)
		}, resource.ErrSignature},
		{"RS-10 x5u pointing to an attacker", func() string {
			return attacker.MintWith(t, oauthtest.Header{Extra: map[string]any{"x5u": evil.URL + "/cert"}}, valid)
		}, resource.ErrSignature},
		{"RS-10 embedded jwk of the attacker", func() string {
			return attacker.MintWith(t, oauthtest.Header{EmbedJWK: true}, valid)
		}, resource.ErrSignature},
		{"RS-10 signed by another key with the same kid", func() string { return attacker.Mint(t, valid) }, resource.ErrSignature},
		{"RS-10 unknown kid", func() string { return f.key.MintWith(t, oauthtest.Header{KeyID: "nope"}, valid) }, resource.ErrUnknownKey},
		{"RS-10 no kid", func() string { return f.key.MintWith(t, oauthtest.Header{OmitKeyID: true}, valid) }, nil},
		{"RS-07 expired", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Expiry = now.Add(-31 * time.Second) })
		}, resource.ErrExpired},
		{"RS-07 expired within leeway", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Expiry = now.Add(-29 * time.Second) })
		}, nil},
		{"RS-10 exp missing", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Expiry = time.Time{} })
		}, resource.ErrMissingExpiry},
		{"RS-10 exp as a string", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"exp": "tomorrow"} })
		}, resource.ErrMalformedToken},
		{"RS-10 exp absurdly far", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"exp": 1e300} })
		}, resource.ErrMalformedToken},
		{"RS-10 nbf in the future", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.NotBefore = now.Add(5 * time.Minute) })
		}, resource.ErrNotYetValid},
		{"RS-10 nbf within leeway", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.NotBefore = now.Add(10 * time.Second) })
		}, nil},
		{"RS-10 iat in the future", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.IssuedAt = now.Add(5 * time.Minute) })
		}, resource.ErrIssuedInFuture},
		{"RS-10 duplicate JSON keys in the payload", func() string {
			return f.key.Sign(t, oauthtest.Header{}, payload(`{"iss":"`+otherIssuer+`","iss":"`+testIssuer+`","aud":"`+testResource+`","exp":`+itoa(now.Add(time.Hour).Unix())+`}`))
		}, resource.ErrMalformedToken},
		{"RS-10 payload is not JSON", func() string { return f.key.Sign(t, oauthtest.Header{}, payload("hello")) }, resource.ErrMalformedToken},
		{"RS-10 payload is a JSON array", func() string { return f.key.Sign(t, oauthtest.Header{}, payload("[1]")) }, resource.ErrMalformedToken},
		{"RS-10 scope with illegal characters", func() string {
			return f.token(func(c *oauthtest.AccessToken) { c.Scope = "a\"b" })
		}, resource.ErrMalformedToken},
		{"RS-10 truncated signature", func() string { tok := f.token(nil); return tok[:len(tok)-10] }, resource.ErrSignature},
		{"RS-10 truncated base64 in the payload", func() string {
			tok := f.token(nil)
			parts := strings.Split(tok, ".")
			return parts[0] + "." + parts[1][:len(parts[1])-3] + "." + parts[2]
		}, resource.ErrInvalidToken},
		{"RS-10 64 KiB token", func() string { return strings.Repeat("a", 64<<10) }, resource.ErrTokenTooLarge},
		{"RS-10 unsupported critical header", func() string {
			return f.key.MintWith(t, oauthtest.Header{Extra: map[string]any{"crit": []string{"exp"}, "exp": 1}}, valid)
		}, resource.ErrInvalidToken},
		{"RS-18 DPoP-bound token presented as bearer", func() string {
			return f.token(func(c *oauthtest.AccessToken) {
				c.Extra = map[string]any{"cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}
			})
		}, resource.ErrBoundToken},
		{"RS-18 refresh token (opaque) without introspection", func() string { return "rt_3f9a8b7c6d5e4f3a2b1c" }, resource.ErrUnsupportedToken},
		{"RS-18 encrypted token", func() string { return "a.b.c.d.e" }, resource.ErrUnsupportedToken},
		{"empty token", func() string { return "" }, resource.ErrMalformedToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info, err := f.v.Verify(context.Background(), tt.token())
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if info.Subject != "user-1" || info.Issuer != testIssuer {
					t.Errorf("info = %+v", info)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
			if !errors.Is(err, resource.ErrInvalidToken) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidToken}) {
				t.Errorf("error %v is not of class invalid_token", err)
			}
			if info != nil {
				t.Errorf("info = %+v on failure", info)
			}
		})
	}
	t.Cleanup(func() {
		if n := attackerHits.Load(); n != 0 {
			t.Errorf("RS-10: the attacker's jku/x5u server was contacted %d times", n)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestVerifyTokenInfo checks the identity a valid token yields (RS-19: the
// handler gets validated claims, not the token).
func TestVerifyTokenInfo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tok := f.token(nil)
	info, err := f.v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	want := &resource.TokenInfo{
		Scheme: "Bearer", Issuer: testIssuer, Subject: "user-1", ClientID: "client-1",
		Audience: []string{testResource}, Scopes: []string{"mcp:tools", "files:read"},
		Expiry: now.Add(time.Hour).UTC(), IssuedAt: now.Add(-time.Minute).UTC(), ID: "jti-1",
	}
	got := *info
	got.Claims = nil
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("TokenInfo = %+v\nwant %+v", got, want)
	}
	if !strings.Contains(string(info.Claims), `"client_id":"client-1"`) {
		t.Errorf("Claims = %s", info.Claims)
	}
	if !info.HasScope("files:read") || info.HasScope("files:write") {
		t.Error("HasScope")
	}
}

// TestVerifyRSA covers RS-10 algorithm confusion: an HS256 token whose
// secret is the RSA public key is refused, and an RS256 token verifies.
func TestVerifyRSA(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.RS256, "rsa-1")
	clock := oauthtest.NewClock(oauthtest.Epoch())
	v, err := resource.New(resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "rsa-1", Public: key.Public()}}}},
		Now:      clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	claims := oauthtest.AccessToken{Issuer: testIssuer, Audience: []string{testResource}, Expiry: clock.Now().Add(time.Hour)}
	if _, err := v.Verify(context.Background(), key.Mint(t, claims)); err != nil {
		t.Fatalf("RS256: %v", err)
	}
	confused := oauthtest.HMAC(t, key.PublicPEM(t), oauthtest.Header{KeyID: "rsa-1"}, oauthtest.MustJSON(t, claims.Claims()))
	if _, err := v.Verify(context.Background(), confused); !errors.Is(err, resource.ErrAlgorithm) {
		t.Errorf("RS-10 HS256 signed with the RSA public key: %v, want ErrAlgorithm", err)
	}
}

// TestVerifyEdDSAAndLegacyType covers the allowlist and the legacy typ
// JWT, accepted only for an issuer whose profile lists it.
func TestVerifyEdDSAAndLegacyType(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.EdDSA, "ed")
	clock := oauthtest.NewClock(oauthtest.Epoch())
	newV := func(algs []string, legacy bool) *resource.Verifier {
		var p resource.Profile
		if legacy {
			p.Types = []string{resource.TypeAccessToken, resource.TypeJWT}
		}
		v, err := resource.New(resource.Config{
			Resource: testResource, Algorithms: algs,
			Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "ed", Public: key.Public()}}, Profile: p}},
			Now:     clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	claims := oauthtest.AccessToken{Issuer: testIssuer, Audience: []string{testResource}, Expiry: clock.Now().Add(time.Hour)}
	tok := key.Mint(t, claims)
	if _, err := newV(nil, false).Verify(context.Background(), tok); !errors.Is(err, resource.ErrAlgorithm) {
		t.Errorf("EdDSA not in the default allowlist: %v", err)
	}
	if _, err := newV([]string{"EdDSA"}, false).Verify(context.Background(), tok); err != nil {
		t.Errorf("EdDSA allowed: %v", err)
	}
	legacy := key.MintWith(t, oauthtest.Header{Type: "JWT"}, claims)
	if _, err := newV([]string{"EdDSA"}, false).Verify(context.Background(), legacy); !errors.Is(err, resource.ErrTokenType) {
		t.Errorf("typ JWT without the opt-in: %v", err)
	}
	if _, err := newV([]string{"EdDSA"}, true).Verify(context.Background(), legacy); err != nil {
		t.Errorf("typ JWT with Profile.Types at+jwt JWT: %v", err)
	}
}

// TestVerifyKeyTypeBinding covers RS-10: an algorithm is accepted only with
// the key type it is bound to, and a JWK's own alg restricts it.
func TestVerifyKeyTypeBinding(t *testing.T) {
	t.Parallel()
	p384 := oauthtest.NewKey(t, oauthtest.ES384, "k")
	clock := oauthtest.NewClock(oauthtest.Epoch())
	claims := oauthtest.AccessToken{Issuer: testIssuer, Audience: []string{testResource}, Expiry: clock.Now().Add(time.Hour)}
	tests := []struct {
		name    string
		key     keyset.Key
		wantErr error
	}{
		{"matching key", keyset.Key{ID: "k", Public: p384.Public()}, nil},
		{"JWK alg restricts the key", keyset.Key{ID: "k", Algorithm: "ES256", Public: p384.Public()}, resource.ErrUnknownKey},
		{"P-256 key for ES384", keyset.Key{ID: "k", Public: oauthtest.NewKey(t, oauthtest.ES256, "k").Public()}, resource.ErrUnknownKey},
		{"Ed25519 key for ES384", keyset.Key{ID: "k", Public: oauthtest.NewKey(t, oauthtest.EdDSA, "k").Public()}, resource.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := resource.New(resource.Config{
				Resource: testResource, Algorithms: []string{"ES256", "ES384"}, Now: clock.Now,
				Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{tt.key}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), p384.Mint(t, claims))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
