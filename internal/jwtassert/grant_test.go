package jwtassert_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

const (
	wifIssuer = "https://oidc.platform.example"
	idpIssuer = "https://acme.idp.example"
	tokenURL  = asIssuer + "/token"
	mcpURL    = "https://mcp.example.com/mcp"
)

// grantEnv is one trusted issuer key and one GrantVerifier.
type grantEnv struct {
	t   testing.TB
	clk *oauthtest.Clock
	key *ecdsa.PrivateKey
	v   *jwtassert.GrantVerifier
}

func newGrantEnv(t testing.TB, profile jwtassert.Profile, mod func(*jwtassert.GrantVerifierConfig)) *grantEnv {
	t.Helper()
	clk := oauthtest.NewClock(t0())
	key := oauthtest.FixedP256(t, 5)
	cfg := jwtassert.GrantVerifierConfig{
		Audiences: []string{asIssuer, tokenURL},
		Issuers: []jwtassert.TrustedIssuer{
			{Issuer: wifIssuer, Keys: keyset.PublicKeys(&key.PublicKey)},
			{Issuer: idpIssuer, Keys: keyset.PublicKeys(&key.PublicKey)},
		},
		Profile: profile,
		Now:     clk.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	v, err := jwtassert.NewGrantVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &grantEnv{t: t, clk: clk, key: key, v: v}
}

// wif hand-signs a workload JWT (untyped, as platforms issue them).
func (e *grantEnv) wif(hdr, claims map[string]any) string {
	now := e.clk.Now().Unix()
	h := oauthtest.Apply(map[string]any{"alg": "ES256"}, hdr)
	c := oauthtest.Apply(map[string]any{
		"iss": wifIssuer, "sub": "spiffe://example.org/ns/default/sa/agent", "aud": tokenURL,
		"jti": "wif-1", "iat": now, "exp": now + 600,
	}, claims)
	return e.sign(h, c)
}

// idjag hand-signs an ID-JAG.
func (e *grantEnv) idjag(hdr, claims map[string]any) string {
	now := e.clk.Now().Unix()
	h := oauthtest.Apply(map[string]any{"alg": "ES256", "typ": "oauth-id-jag+jwt"}, hdr)
	c := oauthtest.Apply(map[string]any{
		"iss": idpIssuer, "sub": "U019488227", "aud": asIssuer, "client_id": clientID, "jti": "jag-1",
		"iat": now, "exp": now + 300, "resource": mcpURL, "scope": "chat.read chat.history",
	}, claims)
	return e.sign(h, c)
}

func (e *grantEnv) sign(h, c map[string]any) string {
	return signRaw(e.t, e.key, h, c)
}

func TestGrantVerifyRejects(t *testing.T) {
	t.Parallel()
	other := oauthtest.FixedP256(t, 6)
	tests := []struct {
		name    string
		profile jwtassert.Profile
		cfg     func(*jwtassert.GrantVerifierConfig)
		make    func(e *grantEnv) string
		client  string
		wantErr error
	}{
		{name: "unknown issuer", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"iss": "https://evil.example"}) },
			wantErr: jwtassert.ErrUnknownIssuer},
		{name: "issuer differs by trailing slash", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"iss": wifIssuer + "/"}) },
			wantErr: jwtassert.ErrUnknownIssuer},
		{name: "iss missing", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"iss": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "sub missing", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"sub": ""}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "assertion for another audience", make: func(e *grantEnv) string {
			return e.wif(nil, map[string]any{"aud": "https://wrong.example"})
		}, wantErr: jwtassert.ErrAudience},
		{name: "expired assertion", make: func(e *grantEnv) string {
			return e.wif(nil, map[string]any{"exp": e.clk.Now().Add(-time.Minute).Unix()})
		}, wantErr: jwtverify.ErrExpired},
		{name: "exp missing", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"exp": oauthtest.Absent{}}) },
			wantErr: jwtverify.ErrMissingExpiry},
		{name: "lifetime beyond an hour", make: func(e *grantEnv) string {
			return e.wif(nil, map[string]any{"exp": e.clk.Now().Add(2 * time.Hour).Unix()})
		}, wantErr: jwtverify.ErrLifetimeTooLong},
		{name: "nbf in the future", make: func(e *grantEnv) string {
			return e.wif(nil, map[string]any{"nbf": e.clk.Now().Add(5 * time.Minute).Unix()})
		}, wantErr: jwtverify.ErrNotYetValid},
		{name: "jti missing", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"jti": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "typ at+jwt", make: func(e *grantEnv) string { return e.wif(map[string]any{"typ": "at+jwt"}, nil) },
			wantErr: jwtassert.ErrWrongType},
		{name: "typ of a client assertion", make: func(e *grantEnv) string {
			return e.wif(map[string]any{"typ": "client-authentication+jwt"}, nil)
		}, wantErr: jwtassert.ErrWrongType},
		{name: "configured type missing", cfg: func(c *jwtassert.GrantVerifierConfig) { c.Type = "workload+jwt" },
			make: func(e *grantEnv) string { return e.wif(nil, nil) }, wantErr: jwtassert.ErrWrongType},
		{name: "client_id claim of another client", client: "client-a",
			make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"client_id": "client-b"}) }, wantErr: jwtassert.ErrClientIDMismatch},
		{name: "signed by a key the issuer does not have", make: func(e *grantEnv) string { return e.wif(map[string]any{"_key": other}, nil) },
			wantErr: jwtverify.ErrSignature},
		{name: "alg none", make: func(e *grantEnv) string { return e.wif(map[string]any{"alg": "none", "_key": nil}, nil) },
			wantErr: jwtverify.ErrAlgorithm},
		{name: "HS256", make: func(e *grantEnv) string {
			return e.wif(map[string]any{"alg": "HS256", "_key": []byte("0123456789abcdef0123456789abcdef")}, nil)
		}, wantErr: jwtverify.ErrAlgorithm},
		{name: "invalid scope", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"scope": "a \"b\""}) },
			wantErr: jwtverify.ErrMalformed},
		{name: "resource not a string", make: func(e *grantEnv) string { return e.wif(nil, map[string]any{"resource": 7}) },
			wantErr: jwtverify.ErrMalformed},
		{name: "ID-JAG: wrong typ", profile: jwtassert.ProfileIDJAG, client: clientID,
			make: func(e *grantEnv) string { return e.idjag(map[string]any{"typ": "JWT"}, nil) }, wantErr: jwtassert.ErrWrongType},
		{name: "ID-JAG: untyped", profile: jwtassert.ProfileIDJAG, client: clientID,
			make: func(e *grantEnv) string { return e.idjag(map[string]any{"typ": oauthtest.Absent{}}, nil) }, wantErr: jwtassert.ErrWrongType},
		{name: "ID-JAG: client_id missing", profile: jwtassert.ProfileIDJAG, client: clientID,
			make: func(e *grantEnv) string { return e.idjag(nil, map[string]any{"client_id": oauthtest.Absent{}}) }, wantErr: jwtassert.ErrMissingClaim},
		{name: "ID-JAG: issued to another client", profile: jwtassert.ProfileIDJAG, client: "https://other-client.example/c.json",
			make: func(e *grantEnv) string { return e.idjag(nil, nil) }, wantErr: jwtassert.ErrClientIDMismatch},
		{name: "ID-JAG: unauthenticated presenter", profile: jwtassert.ProfileIDJAG,
			make: func(e *grantEnv) string { return e.idjag(nil, nil) }, wantErr: jwtassert.ErrClientIDMismatch},
		{name: "ID-JAG: iat missing", profile: jwtassert.ProfileIDJAG, client: clientID,
			make: func(e *grantEnv) string { return e.idjag(nil, map[string]any{"iat": oauthtest.Absent{}}) }, wantErr: jwtverify.ErrMissingIssuedAt},
		{name: "ID-JAG: jti missing despite the insecure switch", profile: jwtassert.ProfileIDJAG, client: clientID,
			cfg:  func(c *jwtassert.GrantVerifierConfig) { c.InsecureAllowMissingJTI = true },
			make: func(e *grantEnv) string { return e.idjag(nil, map[string]any{"jti": oauthtest.Absent{}}) }, wantErr: jwtassert.ErrMissingClaim},
		{name: "ID-JAG: audience is the token endpoint only", profile: jwtassert.ProfileIDJAG, client: clientID,
			cfg:  func(c *jwtassert.GrantVerifierConfig) { c.Audiences = []string{asIssuer} },
			make: func(e *grantEnv) string { return e.idjag(nil, map[string]any{"aud": tokenURL}) }, wantErr: jwtassert.ErrAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newGrantEnv(t, tt.profile, tt.cfg)
			got, err := e.v.Verify(context.Background(), tt.make(e), tt.client)
			if !errors.Is(err, tt.wantErr) || got != nil {
				t.Fatalf("Verify = %+v, %v; want %v", got, err, tt.wantErr)
			}
			if !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) {
				t.Fatalf("error %v does not carry invalid_grant", err)
			}
		})
	}
}

func TestGrantVerifyWorkloadIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    func(*jwtassert.GrantVerifierConfig)
		hdr    map[string]any
		claims map[string]any
		client string
	}{
		{name: "platform token, untyped"},
		{name: "typ JWT", hdr: map[string]any{"typ": "JWT"}},
		{name: "audience is the issuer", claims: map[string]any{"aud": asIssuer}},
		{name: "client_id claim of the presenter", claims: map[string]any{"client_id": "c"}, client: "c"},
		{name: "no jti with the insecure switch", claims: map[string]any{"jti": oauthtest.Absent{}},
			cfg: func(c *jwtassert.GrantVerifierConfig) { c.InsecureAllowMissingJTI = true }},
		{name: "configured type", hdr: map[string]any{"typ": "application/workload+jwt"},
			cfg: func(c *jwtassert.GrantVerifierConfig) { c.Type = "workload+jwt" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newGrantEnv(t, jwtassert.ProfileJWTBearer, tt.cfg)
			g, err := e.v.Verify(context.Background(), e.wif(tt.hdr, tt.claims), tt.client)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if g.Issuer != wifIssuer || g.Subject != "spiffe://example.org/ns/default/sa/agent" {
				t.Fatalf("grant = %+v", g)
			}
		})
	}
}

func TestGrantReplay(t *testing.T) {
	t.Parallel()
	e := newGrantEnv(t, jwtassert.ProfileJWTBearer, nil)
	a := e.wif(nil, nil)
	if _, err := e.v.Verify(context.Background(), a, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.v.Verify(context.Background(), a, ""); !errors.Is(err, replay.ErrReplayed) {
		t.Fatalf("replayed grant: %v, want ErrReplayed", err)
	}
	// The same jti from another trusted issuer is another grant.
	if _, err := e.v.Verify(context.Background(), e.wif(nil, map[string]any{"iss": idpIssuer}), ""); err != nil {
		t.Fatalf("same jti, other issuer: %v", err)
	}
}

// TestIDJAGRoundTrip issues an ID-JAG with IDJAGSigner and accepts it with
// an ID-JAG GrantVerifier, as the MCP authorization server would.
func TestIDJAGRoundTrip(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	idpKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	signer, err := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{Issuer: idpIssuer, Key: idpKey, KeyID: "idp-1", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	v, err := jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
		Audiences: []string{asIssuer},
		Issuers:   []jwtassert.TrustedIssuer{{Issuer: idpIssuer, Keys: keyset.Static{{ID: "idp-1", Public: &idpKey.PublicKey}}}},
		Profile:   jwtassert.ProfileIDJAG,
		Now:       clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	jag, err := signer.Sign(jwtassert.IDJAGClaims{
		Subject: "U019488227", Audience: asIssuer, ClientID: clientID, Resource: []string{mcpURL},
		Scope: []string{"chat.read", "chat.history"}, Extra: map[string]any{"email": "user@example.com", "amr": []string{"mfa"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := v.Verify(context.Background(), jag, clientID)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if g.ClientID != clientID || !slices.Equal(g.Resource, []string{mcpURL}) || !slices.Equal(g.Scope, []string{"chat.read", "chat.history"}) ||
		!g.ExpiresAt.Equal(t0().Add(jwtassert.DefaultIDJAGLifetime)) || !g.IssuedAt.Equal(t0()) {
		t.Fatalf("grant = %+v", g)
	}
	var extra struct {
		Email string `json:"email"`
	}
	if err := jsonx.DecodeObject(g.Claims, &extra); err != nil || extra.Email != "user@example.com" {
		t.Fatalf("Claims: %v, %+v", err, extra)
	}
	if _, err := v.Verify(context.Background(), jag, clientID); !errors.Is(err, replay.ErrReplayed) {
		t.Fatalf("ID-JAG presented twice: %v", err)
	}
}

func TestIDJAGGolden(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	s, err := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{
		Issuer: idpIssuer, Key: oauthtest.FixedP256(t, 9), KeyID: "idp-key-1", Now: clk.Now,
		Rand: bytes.NewReader(bytes.Repeat([]byte{0x3C}, 16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	jag, err := s.Sign(jwtassert.IDJAGClaims{
		Subject: "U019488227", Audience: asIssuer, ClientID: clientID,
		Resource: []string{mcpURL}, Scope: []string{"chat.read"}, Extra: map[string]any{"email": "user@example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	h, c := oauthtest.DecodeJWS(t, jag)
	golden.JSON(t, "id_jag.json", map[string]any{"header": h, "claims": c})
}

func TestIDJAGSignerRejects(t *testing.T) {
	t.Parallel()
	key := oauthtest.FixedP256(t, 9)
	for name, cfg := range map[string]jwtassert.IDJAGSignerConfig{
		"no issuer":         {Key: key},
		"no key":            {Issuer: idpIssuer},
		"lifetime too long": {Issuer: idpIssuer, Key: key, Lifetime: 2 * time.Hour},
	} {
		if _, err := jwtassert.NewIDJAGSigner(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s, err := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{Issuer: idpIssuer, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]jwtassert.IDJAGClaims{
		"no subject":            {Audience: asIssuer, ClientID: "c"},
		"no audience":           {Subject: "u", ClientID: "c"},
		"no client_id":          {Subject: "u", Audience: asIssuer},
		"bad scope":             {Subject: "u", Audience: asIssuer, ClientID: "c", Scope: []string{"a b"}},
		"extra overrides iss":   {Subject: "u", Audience: asIssuer, ClientID: "c", Extra: map[string]any{"iss": "x"}},
		"extra overrides scope": {Subject: "u", Audience: asIssuer, ClientID: "c", Extra: map[string]any{"scope": "admin"}},
	} {
		if _, err := s.Sign(c); err == nil {
			t.Errorf("%s: Sign accepted", name)
		}
	}
}

func TestNewGrantVerifierRejects(t *testing.T) {
	t.Parallel()
	keys := keyset.PublicKeys(&oauthtest.FixedP256(t, 1).PublicKey)
	ok := []jwtassert.TrustedIssuer{{Issuer: idpIssuer, Keys: keys}}
	for name, cfg := range map[string]jwtassert.GrantVerifierConfig{
		"no audiences":        {Issuers: ok},
		"no issuers":          {Audiences: []string{asIssuer}},
		"issuer without keys": {Audiences: []string{asIssuer}, Issuers: []jwtassert.TrustedIssuer{{Issuer: idpIssuer}}},
		"issuer twice":        {Audiences: []string{asIssuer}, Issuers: append(ok, ok...)},
		"type with ID-JAG":    {Audiences: []string{asIssuer}, Issuers: ok, Profile: jwtassert.ProfileIDJAG, Type: "JWT"},
		"unknown profile":     {Audiences: []string{asIssuer}, Issuers: ok, Profile: 7},
		"HS256":               {Audiences: []string{asIssuer}, Issuers: ok, Algorithms: []string{"HS256"}},
	} {
		if _, err := jwtassert.NewGrantVerifier(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestGrantVerifyDoesNotFetchKeysForBadClaims(t *testing.T) {
	t.Parallel()
	clk := oauthtest.NewClock(t0())
	src := &countingKeys{}
	v, err := jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
		Audiences: []string{asIssuer}, Issuers: []jwtassert.TrustedIssuer{{Issuer: wifIssuer, Keys: src}}, Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &grantEnv{t: t, clk: clk, key: oauthtest.FixedP256(t, 5), v: v}
	for _, bad := range []string{
		e.wif(nil, map[string]any{"aud": "https://wrong"}),
		e.wif(nil, map[string]any{"exp": 1}),
		e.wif(nil, map[string]any{"iss": "https://unknown"}),
	} {
		if _, err := v.Verify(context.Background(), bad, ""); err == nil {
			t.Fatal("bad grant accepted")
		}
	}
	if src.calls != 0 {
		t.Fatalf("key source consulted %d times for grants refused on their claims", src.calls)
	}
}

type countingKeys struct{ calls int }

func (c *countingKeys) Keys(context.Context, string) ([]keyset.Key, error) {
	c.calls++
	return nil, nil
}

// TestIDTokenProfile: an ID token presented to an identity provider as a
// token exchange subject (Enterprise-Managed Authorization, IdP side) may
// be exchanged more than once and needs no jti, but "iat", a trusted issuer,
// an accepted audience and a valid signature as any grant.
func TestIDTokenProfile(t *testing.T) {
	t.Parallel()
	e := newGrantEnv(t, jwtassert.ProfileIDToken, func(c *jwtassert.GrantVerifierConfig) { c.Audiences = []string{"idp-client"} })
	now := e.clk.Now().Unix()
	idt := func(claims map[string]any) string {
		return e.sign(map[string]any{"alg": "ES256", "typ": "JWT"}, oauthtest.Apply(map[string]any{
			"iss": idpIssuer, "sub": "alice", "aud": "idp-client", "iat": now, "exp": now + 600,
		}, claims))
	}
	good := idt(nil)
	for i := range 2 {
		if _, err := e.v.Verify(context.Background(), good, ""); err != nil {
			t.Fatalf("exchange %d: %v", i+1, err)
		}
	}
	tests := []struct {
		name    string
		jwt     string
		wantErr error
	}{
		{"with jti, still reusable", idt(map[string]any{"jti": "x"}), nil},
		{"missing iat", idt(map[string]any{"iat": oauthtest.Absent{}}), jwtverify.ErrMissingIssuedAt},
		{"another audience", idt(map[string]any{"aud": "other-client"}), jwtassert.ErrAudience},
		{"expired", idt(map[string]any{"exp": now - 60}), jwtverify.ErrExpired},
		{"untrusted issuer", idt(map[string]any{"iss": "https://evil.example"}), jwtassert.ErrUnknownIssuer},
		{"typed as an ID-JAG", e.idjag(nil, map[string]any{"aud": "idp-client"}), jwtassert.ErrWrongType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 2 {
				if _, err := e.v.Verify(context.Background(), tt.jwt, ""); !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}
