package jwtassert_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

const (
	clientID = "https://client.example.com/client.json"
	asIssuer = "https://as.example.com"
)

// caEnv is one client key and one verifier.
type caEnv struct {
	t   testing.TB
	clk *oauthtest.Clock
	key *ecdsa.PrivateKey
	v   *jwtassert.ClientAssertionVerifier
}

func newCAEnv(t testing.TB, mod func(*jwtassert.ClientAssertionVerifierConfig)) *caEnv {
	t.Helper()
	clk := oauthtest.NewClock(t0())
	cfg := jwtassert.ClientAssertionVerifierConfig{Audiences: []string{asIssuer}, Now: clk.Now}
	if mod != nil {
		mod(&cfg)
	}
	v, err := jwtassert.NewClientAssertionVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &caEnv{t: t, clk: clk, key: oauthtest.FixedP256(t, 3), v: v}
}

func (e *caEnv) keys() keyset.Static {
	return keyset.Static{{ID: "k1", Public: &e.key.PublicKey}}
}

// assertion hand-signs a client assertion with the given overrides.
func (e *caEnv) assertion(hdr, claims map[string]any) string {
	h := oauthtest.Apply(map[string]any{"alg": "ES256", "typ": "client-authentication+jwt", "kid": "k1"}, hdr)
	now := e.clk.Now().Unix()
	c := oauthtest.Apply(map[string]any{
		"iss": clientID, "sub": clientID, "aud": asIssuer, "jti": "jti-1", "iat": now, "exp": now + 60,
	}, claims)
	return signRaw(e.t, e.key, h, c)
}

func TestClientAssertionVerifyRejects(t *testing.T) {
	t.Parallel()
	other := oauthtest.FixedP256(t, 4)
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	tests := []struct {
		name    string
		cfg     func(*jwtassert.ClientAssertionVerifierConfig)
		make    func(e *caEnv) string
		keys    func(e *caEnv) keyset.Source
		client  string
		wantErr error
		code    oauthmeta.ErrorCode
	}{
		{name: "empty", make: func(e *caEnv) string { return "" }, wantErr: jwtverify.ErrMalformed},
		{name: "garbage", make: func(e *caEnv) string { return "a.b.c" }, wantErr: jwtverify.ErrMalformed},
		{name: "JWE shape", make: func(e *caEnv) string { return "a.b.c.d.e" }, wantErr: jwtverify.ErrMalformed},
		{name: "too large", cfg: func(c *jwtassert.ClientAssertionVerifierConfig) { c.MaxSize = 64 },
			make: func(e *caEnv) string { return e.assertion(nil, nil) }, wantErr: jwtassert.ErrTooLarge},
		{name: "alg none (RS-10)", make: func(e *caEnv) string {
			return e.assertion(map[string]any{"alg": "none", "_key": nil}, nil)
		}, wantErr: jwtverify.ErrAlgorithm},
		{name: "HS256 with the public key as secret", make: func(e *caEnv) string {
			secret, _ := json.Marshal(e.key.PublicKey.X.Bytes())
			return e.assertion(map[string]any{"alg": "HS256", "_key": secret}, nil)
		}, wantErr: jwtverify.ErrAlgorithm},
		{name: "alg outside the allowlist", cfg: func(c *jwtassert.ClientAssertionVerifierConfig) { c.Algorithms = []string{"RS256"} },
			make: func(e *caEnv) string { return e.assertion(nil, nil) }, wantErr: jwtverify.ErrAlgorithm},
		{name: "crit header", make: func(e *caEnv) string { return e.assertion(map[string]any{"crit": []string{"x"}}, nil) },
			wantErr: jwtverify.ErrMalformed},
		{name: "typ at+jwt (RFC 8725 §3.11)", make: func(e *caEnv) string { return e.assertion(map[string]any{"typ": "at+jwt"}, nil) },
			wantErr: jwtassert.ErrWrongType},
		{name: "typ dpop+jwt", make: func(e *caEnv) string { return e.assertion(map[string]any{"typ": "dpop+jwt"}, nil) },
			wantErr: jwtassert.ErrWrongType},
		{name: "typ of an ID-JAG", make: func(e *caEnv) string { return e.assertion(map[string]any{"typ": "oauth-id-jag+jwt"}, nil) },
			wantErr: jwtassert.ErrWrongType},
		{name: "explicit type required, JWT given", cfg: func(c *jwtassert.ClientAssertionVerifierConfig) { c.RequireExplicitType = true },
			make: func(e *caEnv) string { return e.assertion(map[string]any{"typ": "JWT"}, nil) }, wantErr: jwtassert.ErrWrongType},
		{name: "iss missing", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"iss": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "iss is another client", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"iss": "other", "sub": "other"}) },
			wantErr: jwtassert.ErrIssuerMismatch},
		{name: "iss differs from sub", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"sub": "someone-else"}) },
			wantErr: jwtassert.ErrSubjectMismatch},
		{name: "sub missing", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"sub": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "no expected client_id", client: "-", make: func(e *caEnv) string { return e.assertion(nil, nil) },
			wantErr: jwtassert.ErrIssuerMismatch},
		{name: "assertion for another audience", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"aud": "https://other-as.example.com"})
		}, wantErr: jwtassert.ErrAudience},
		{name: "token endpoint audience not configured (rfc7523bis)", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"aud": asIssuer + "/token"})
		}, wantErr: jwtassert.ErrAudience},
		{name: "aud missing", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"aud": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "aud not a string", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"aud": 42}) },
			wantErr: jwtverify.ErrMalformed},
		{name: "expired assertion", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"exp": e.clk.Now().Add(-jwtassert.DefaultLeeway - time.Second).Unix()})
		}, wantErr: jwtverify.ErrExpired},
		{name: "exp missing", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"exp": oauthtest.Absent{}}) },
			wantErr: jwtverify.ErrMissingExpiry},
		{name: "exp too far ahead", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"exp": e.clk.Now().Add(10 * time.Minute).Unix()})
		}, wantErr: jwtverify.ErrLifetimeTooLong},
		{name: "exp as string", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"exp": "soon"}) },
			wantErr: jwtverify.ErrMalformed},
		{name: "nbf in the future", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"nbf": e.clk.Now().Add(time.Minute).Unix()})
		}, wantErr: jwtverify.ErrNotYetValid},
		{name: "iat in the future", make: func(e *caEnv) string {
			return e.assertion(nil, map[string]any{"iat": e.clk.Now().Add(time.Minute).Unix()})
		}, wantErr: jwtverify.ErrIssuedInFuture},
		{name: "jti missing", make: func(e *caEnv) string { return e.assertion(nil, map[string]any{"jti": oauthtest.Absent{}}) },
			wantErr: jwtassert.ErrMissingClaim},
		{name: "signed by another key", make: func(e *caEnv) string { return e.assertion(map[string]any{"_key": other}, nil) },
			wantErr: jwtverify.ErrSignature},
		{name: "tampered payload", make: func(e *caEnv) string {
			parts := strings.Split(e.assertion(nil, nil), ".")
			return parts[0] + "." + oauthtest.B64JSON(t, map[string]any{"iss": clientID, "sub": clientID, "aud": asIssuer, "jti": "x",
				"exp": e.clk.Now().Unix() + 60}) + "." + parts[2]
		}, wantErr: jwtverify.ErrSignature},
		{name: "unknown kid", make: func(e *caEnv) string { return e.assertion(map[string]any{"kid": "k2"}, nil) },
			wantErr: jwtverify.ErrUnknownKey},
		{name: "no key of the right type", make: func(e *caEnv) string { return e.assertion(nil, nil) },
			keys:    func(e *caEnv) keyset.Source { return keyset.PublicKeys(&rsaKey.PublicKey) },
			wantErr: jwtverify.ErrUnknownKey},
		{name: "jwk header ignored (RS-10)", make: func(e *caEnv) string {
			return e.assertion(map[string]any{"_key": other, "kid": oauthtest.Absent{}, "jwk": oauthtest.JWKMap(t, &other.PublicKey)}, nil)
		}, wantErr: jwtverify.ErrSignature},
		{name: "key source down", make: func(e *caEnv) string { return e.assertion(nil, nil) },
			keys: func(e *caEnv) keyset.Source { return failingKeys{} }, wantErr: jwtverify.ErrKeysUnavailable,
			code: oauthmeta.CodeTemporarilyUnavailable},
		{name: "no key source", make: func(e *caEnv) string { return e.assertion(nil, nil) },
			keys: func(e *caEnv) keyset.Source { return nil }, wantErr: jwtverify.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newCAEnv(t, tt.cfg)
			var keys keyset.Source = e.keys()
			if tt.keys != nil {
				keys = tt.keys(e)
			}
			client := clientID
			if tt.client == "-" {
				client = ""
			}
			got, err := e.v.Verify(context.Background(), tt.make(e), client, keys)
			if !errors.Is(err, tt.wantErr) || got != nil {
				t.Fatalf("Verify = %v, %v; want %v", got, err, tt.wantErr)
			}
			code := tt.code
			if code == "" {
				code = oauthmeta.CodeInvalidClient
			}
			if !errors.Is(err, &oauthmeta.Error{Code: code}) {
				t.Fatalf("error %v does not carry %s", err, code)
			}
		})
	}
}

type failingKeys struct{}

func (failingKeys) Keys(context.Context, string) ([]keyset.Key, error) {
	return nil, errors.New("jwks down")
}

func TestClientAssertionReplay(t *testing.T) {
	t.Parallel()
	e := newCAEnv(t, nil)
	ctx := context.Background()
	a := e.assertion(nil, nil)
	if _, err := e.v.Verify(ctx, a, clientID, e.keys()); err != nil {
		t.Fatal(err)
	}
	_, err := e.v.Verify(ctx, a, clientID, e.keys())
	if !errors.Is(err, replay.ErrReplayed) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidClient}) {
		t.Fatalf("replayed client assertion: %v, want ErrReplayed/invalid_client", err)
	}
	// A new assertion with a new jti is fine.
	if _, err := e.v.Verify(ctx, e.assertion(nil, map[string]any{"jti": "jti-2"}), clientID, e.keys()); err != nil {
		t.Fatal(err)
	}
	// The replay store fails closed.
	full := newCAEnv(t, func(c *jwtassert.ClientAssertionVerifierConfig) { c.MaxReplayEntries = 1 })
	if _, err := full.v.Verify(ctx, full.assertion(nil, nil), clientID, full.keys()); err != nil {
		t.Fatal(err)
	}
	_, err = full.v.Verify(ctx, full.assertion(nil, map[string]any{"jti": "x"}), clientID, full.keys())
	if !errors.Is(err, jwtassert.ErrReplayCheckUnavailable) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}) {
		t.Fatalf("full replay cache: %v", err)
	}
}

func TestClientAssertionAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    func(*jwtassert.ClientAssertionVerifierConfig)
		hdr    map[string]any
		claims map[string]any
	}{
		{name: "explicitly typed"},
		{name: "untyped", hdr: map[string]any{"typ": oauthtest.Absent{}}},
		{name: "typ JWT", hdr: map[string]any{"typ": "JWT"}},
		{name: "typ with application/ prefix", hdr: map[string]any{"typ": "application/client-authentication+jwt"}},
		{name: "aud array with the issuer", claims: map[string]any{"aud": []string{"https://x", asIssuer}}},
		{name: "token endpoint audience when configured", claims: map[string]any{"aud": asIssuer + "/token"},
			cfg: func(c *jwtassert.ClientAssertionVerifierConfig) { c.Audiences = append(c.Audiences, asIssuer+"/token") }},
		{name: "no kid", hdr: map[string]any{"kid": oauthtest.Absent{}}},
		{name: "exp within leeway", claims: map[string]any{"exp": t0().Add(-10 * time.Second).Unix()}},
		{name: "no iat", claims: map[string]any{"iat": oauthtest.Absent{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newCAEnv(t, tt.cfg)
			got, err := e.v.Verify(context.Background(), e.assertion(tt.hdr, tt.claims), clientID, e.keys())
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.ClientID != clientID || got.JTI != "jti-1" || got.KeyID != "k1" {
				t.Fatalf("result = %+v", got)
			}
		})
	}
}

func TestNewClientAssertionVerifierRejects(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]jwtassert.ClientAssertionVerifierConfig{
		"no audiences":    {},
		"empty audience":  {Audiences: []string{""}},
		"HS256 allowed":   {Audiences: []string{asIssuer}, Algorithms: []string{"HS256"}},
		"none allowed":    {Audiences: []string{asIssuer}, Algorithms: []string{"none"}},
		"negative leeway": {Audiences: []string{asIssuer}, Leeway: -1},
		"negative size":   {Audiences: []string{asIssuer}, MaxSize: -1},
	} {
		if _, err := jwtassert.NewClientAssertionVerifier(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestUnverifiedClientID(t *testing.T) {
	t.Parallel()
	e := newCAEnv(t, nil)
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error
	}{
		{"valid", e.assertion(nil, nil), clientID, nil},
		{"iss differs", e.assertion(nil, map[string]any{"iss": "x"}), "", jwtassert.ErrIssuerMismatch},
		{"no sub", e.assertion(nil, map[string]any{"sub": oauthtest.Absent{}}), "", jwtassert.ErrMissingClaim},
		{"garbage", "x", "", jwtverify.ErrMalformed},
		{"bad payload", "a.!!.c", "", jwtverify.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := jwtassert.UnverifiedClientID(tt.in)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("UnverifiedClientID = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
