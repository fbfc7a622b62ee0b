package resource_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// jwksCaseAlgorithms allows every algorithm the shared JWK Set table signs
// with, so a refusal can only come from the key set.
var jwksCaseAlgorithms = []string{"ES256", "PS256", "RS256", "EdDSA"}

// verifyJWKSCase verifies a token signed by tt.Signer for issuer with keys,
// and checks it is accepted exactly when the row's key is usable.
func verifyJWKSCase(t *testing.T, tt oauthtest.JWKSCase, issuer string, keys keyset.Source, remote *oauthtest.JWKSServer) {
	t.Helper()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	is := resource.Issuer{Issuer: issuer, Keys: keys}
	cfg := resource.Config{
		Resource:   testResource,
		Algorithms: jwksCaseAlgorithms,
		Cache:      resource.CacheConfig{Disabled: true},
		Now:        clock.Now,
	}
	if remote != nil {
		is.JWKSURI = remote.JWKSURI
		cfg.TLSConfig, cfg.InsecureAllowHTTPLoopback = remote.TLSConfig(), true
	}
	cfg.Issuers = []resource.Issuer{is}
	v, err := resource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	tok := tt.Signer.Mint(t, oauthtest.AccessToken{Issuer: issuer, Audience: []string{testResource}, Subject: "u",
		Expiry: clock.Now().Add(time.Hour), IssuedAt: clock.Now()})
	info, err := v.Verify(context.Background(), tok)
	if (err == nil) != tt.Verifies() {
		t.Fatalf("Verify = %v, %v; want accepted %v", info, err, tt.Verifies())
	}
	if err != nil && tt.Refused && !errors.Is(err, resource.ErrKeysUnavailable) {
		t.Errorf("a refused set must leave the issuer without keys (503): %v", err)
	}
}

// TestJWKSCasesStatic runs the shared JWK Set table (oauthtest.JWKSCases)
// through ParseStaticKeys and a Verifier.
func TestJWKSCasesStatic(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			keys, err := resource.ParseStaticKeys(tt.JWKS)
			if tt.Refused {
				if !errors.Is(err, resource.ErrInvalidConfig) || keys != nil {
					t.Fatalf("ParseStaticKeys = %v, %v; want ErrInvalidConfig", keys, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			verifyJWKSCase(t, tt, testIssuer, keys, nil)
		})
	}
}

// TestJWKSCasesRemote runs the shared JWK Set table through RemoteKeys: a
// fetched set is judged exactly as a static one. Before the one JWK Set
// rule, a set holding a private key was accepted here and its public half
// used.
func TestJWKSCasesRemote(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			srv := oauthtest.NewJWKSServer(t)
			srv.SetRawJWKS(tt.JWKS)
			verifyJWKSCase(t, tt, srv.Issuer, nil, srv)
			if n := srv.JWKSFetches(); n != 1 {
				t.Errorf("JWK Set fetches = %d, want 1", n)
			}
		})
	}
}
