package resource

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestDecodeAccessClaims: the RFC 9068 payload is decoded under the one
// JSON policy, with each claim of its JSON type (null counts as absent).
func TestDecodeAccessClaims(t *testing.T) {
	t.Parallel()
	good := []string{
		`{"iss":"a","aud":["x","y"],"exp":1.5e9,"nbf":null,"scope":"a b","x":{"y":[1,{"z":null}]}}`,
		` {"aud":"x","cnf":{"jkt":"t"},"iss":"\u0061"} `,
		`{"cnf":null}`,
		`{}`,
	}
	bad := []string{
		`{"iss":"a","iss":"b"}`, `{"x":{"a":1,"a":2}}`, `{"iss":1}`, `{"aud":[1]}`, `{"aud":{}}`,
		`{"exp":"1"}`, `{"exp":1e400}`, "{\"sub\":\"\xff\"}", "{\"\xff\":1}", `[]`, `{"iss":"a"} x`, `{"iss":"\ud800"}`,
		`{"cnf":"x"}`, `{"cnf":{"jkt":1}}`,
	}
	for _, s := range good {
		var c accessClaims
		if err := jwtverify.DecodeClaims([]byte(s), &c); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range bad {
		var c accessClaims
		if err := jwtverify.DecodeClaims([]byte(s), &c); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

// scopeCases are scope claims for the parseScope equivalence checks
// (RS-12: the token's scopes are what the policy compares against).
var scopeCases = []string{
	"", " ", "   ", "a", "a b", "a  b", " a b ", "a b a", "a a a a a", "a b c d", "a b c d e",
	"a b c d e f g h", "mcp:tools files:read", "a\tb", "a\"b", "a\\b", "a\x7fb", "a é", "a\x00",
	"!#[]~ x", "a b  c d a b", "a b c d d",
}

func TestParseScopeMatchesOAuthMeta(t *testing.T) {
	t.Parallel()
	for _, s := range scopeCases {
		t.Run(strconv.Quote(s), func(t *testing.T) {
			t.Parallel()
			checkParseScope(t, s)
		})
	}
}

func FuzzParseScope(f *testing.F) {
	for _, s := range scopeCases {
		f.Add(s)
	}
	f.Fuzz(checkParseScope)
}

// checkParseScope holds parseScope, with and without inline storage, to
// oauthmeta.ParseScope, and checks that the result has no spare capacity
// (an append must never write into the shared storage).
func checkParseScope(t *testing.T, s string) {
	want, err := oauthmeta.ParseScope(s)
	for _, n := range []int{0, 1, scopeInline} {
		got, ok := parseScope(s, make([]string, n))
		if ok != (err == nil) || !slices.Equal(got, want) || (got == nil) != (want == nil) || cap(got) != len(got) {
			t.Fatalf("parseScope(%q, buf %d) = %q, %v (cap %d); oauthmeta.ParseScope = %q, %v", s, n, got, ok, cap(got), want, err)
		}
	}
}

// TestVerifiedAudienceStorage: a verification's audience is the token's,
// a single one held in the verification's own storage, and has no spare
// capacity, so that an append by a caller never writes into it.
func TestVerifiedAudienceStorage(t *testing.T) {
	t.Parallel()
	const res, iss = "https://mcp.example.com/mcp", "https://as.example.com"
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	clk := oauthtest.NewClock(oauthtest.Epoch())
	v, err := New(Config{
		Resource: res,
		Issuers:  []Issuer{{Issuer: iss, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
		Now:      clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, aud := range [][]string{{res}, {"https://other.example.com", res}} {
		tok := key.Mint(t, oauthtest.AccessToken{Issuer: iss, Subject: "u", Audience: aud, Scope: "a",
			IssuedAt: clk.Now(), Expiry: clk.Now().Add(time.Hour)})
		av, err := v.verify(context.Background(), tok, schemeBearer, shapeUnknown)
		if err != nil {
			t.Fatal(err)
		}
		got := av.info.Audience
		if !slices.Equal(got, aud) || cap(got) != len(got) {
			t.Fatalf("audience %q (cap %d), want %q", got, cap(got), aud)
		}
		if (len(aud) == 1) != (&got[0] == &av.aud[0]) {
			t.Fatalf("audience %q: in the verification's storage %v", aud, &got[0] == &av.aud[0])
		}
	}
}
