package jwtassert_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwtassert"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// FuzzClientAssertionVerify: arbitrary assertions never panic and never
// authenticate. Seeds fail exactly one check each.
func FuzzClientAssertionVerify(f *testing.F) {
	e := newCAEnv(f, nil)
	for _, over := range []map[string]any{
		{"aud": "https://other"}, {"exp": 1}, {"sub": "x"}, {"jti": oauthtest.Absent{}}, {"iss": oauthtest.Absent{}},
	} {
		f.Add(e.assertion(nil, over))
	}
	f.Add(e.assertion(map[string]any{"alg": "none", "_key": nil}, nil))
	f.Add(e.assertion(map[string]any{"typ": "at+jwt"}, nil))
	f.Add(e.assertion(map[string]any{"_key": oauthtest.FixedP256(f, 8)}, nil))
	spent := e.assertion(nil, map[string]any{"jti": "spent"})
	if _, err := e.v.Verify(context.Background(), spent, clientID, e.keys()); err != nil {
		f.Fatal(err)
	}
	f.Add(spent)
	f.Add("")
	f.Add("a.b.c")
	f.Add(strings.Repeat("e", 20000))
	f.Fuzz(func(t *testing.T, assertion string) {
		got, err := e.v.Verify(context.Background(), assertion, clientID, e.keys())
		if err == nil || got != nil {
			t.Fatalf("Verify accepted a fuzzed assertion: %q", assertion)
		}
		_, _ = jwtassert.UnverifiedClientID(assertion)
	})
}

// FuzzGrantVerify: arbitrary grants never panic and never verify, for both
// profiles.
func FuzzGrantVerify(f *testing.F) {
	wif := newGrantEnv(f, jwtassert.ProfileJWTBearer, func(c *jwtassert.GrantVerifierConfig) {
		c.Issuers = c.Issuers[:1] // the workload issuer only
	})
	jag := newGrantEnv(f, jwtassert.ProfileIDJAG, nil)
	for _, over := range []map[string]any{
		{"aud": "https://other"}, {"exp": 1}, {"iss": "https://evil"}, {"jti": oauthtest.Absent{}}, {"client_id": "x"},
		{"resource": []any{1}}, {"scope": "\x00"},
	} {
		f.Add(wif.wif(nil, over))
		f.Add(jag.idjag(nil, over))
	}
	f.Add(jag.idjag(map[string]any{"typ": "JWT"}, nil))
	spentWIF, spentJAG := wif.wif(nil, nil), jag.idjag(nil, nil)
	if _, err := wif.v.Verify(context.Background(), spentWIF, ""); err != nil {
		f.Fatal(err)
	}
	if _, err := jag.v.Verify(context.Background(), spentJAG, clientID); err != nil {
		f.Fatal(err)
	}
	f.Add(spentWIF)
	f.Add(spentJAG)
	f.Add("x.y.z")
	f.Fuzz(func(t *testing.T, assertion string) {
		if g, err := wif.v.Verify(context.Background(), assertion, ""); err == nil || g != nil {
			t.Fatalf("workload verifier accepted %q", assertion)
		}
		if g, err := jag.v.Verify(context.Background(), assertion, clientID); err == nil || g != nil {
			t.Fatalf("ID-JAG verifier accepted %q", assertion)
		}
	})
}

// FuzzParsePrivateKeyPEM: never panics; a returned key signs.
func FuzzParsePrivateKeyPEM(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := jwtassert.ParsePrivateKeyPEM(data)
		if err == nil && k.Public() == nil {
			t.Fatal("key without a public half")
		}
	})
}
