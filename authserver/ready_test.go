package authserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestReadyTrustedIssuers: Ready fetches the trusted issuers' key sets
// (by JWKSURI and by discovery) once, answers from memory while they are
// fresh, fails naming the issuer once one is stale and down, and passes
// again when it is back; a client's jwks_uri being down never matters.
func TestReadyTrustedIssuers(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	workload := oauthtest.NewPlainJWKSServer(t, key)
	idjag := oauthtest.NewPlainJWKSServer(t, key)
	client := oauthtest.NewPlainJWKSServer(t, key)
	client.SetStatus(http.StatusServiceUnavailable)
	h := newHarness(t, "", func(c *Config) {
		c.KeyFetch = KeyFetchConfig{InsecureAllowHTTPLoopback: true}
		c.Clients = append(c.Clients, jwksClient(nil, client.JWKSURI))
		c.TrustedIssuers = []TrustedIssuer{
			{Issuer: workload.Issuer, JWKSURI: workload.JWKSURI, Rules: []WorkloadRule{
				{Subject: "ci", Resources: []string{"https://mcp.example.com/mcp"}, Scopes: []string{"mcp:read"}}}},
			{Issuer: idjag.Issuer, Kind: GrantIDJAG, Discover: true},
		}
	})
	if c := h.as.ReadyChecks(); len(c) != 1 || c[0].Name != "trusted_issuers" {
		t.Fatalf("ReadyChecks = %+v, want trusted_issuers", c)
	}
	ctx := context.Background()
	for _, s := range []struct {
		name    string
		advance time.Duration
		down    bool // the workload issuer's JWK Set answers 503
		ok      bool
		fetches int // the workload issuer's JWK Set requests so far
	}{
		{"first probe fetches", 0, false, true, 1},
		{"fresh, from memory", 59 * time.Minute, false, true, 1},
		{"fresh although down", 0, true, true, 1},
		{"stale and down", 2 * time.Minute, true, false, 2},
		{"back", time.Minute, false, true, 3},
	} {
		h.clock.Advance(s.advance)
		status := http.StatusOK
		if s.down {
			status = http.StatusServiceUnavailable
		}
		workload.SetStatus(status)
		err := h.as.Ready(ctx)
		if (err == nil) != s.ok {
			t.Fatalf("%s: Ready = %v, want ok %v", s.name, err, s.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "trusted issuer "+workload.Issuer) || strings.Contains(err.Error(), idjag.Issuer)) {
			t.Fatalf("%s: Ready = %v, want only the workload issuer named", s.name, err)
		}
		if got := workload.JWKSFetches(); got != s.fetches {
			t.Fatalf("%s: %d JWK Set fetches, want %d", s.name, got, s.fetches)
		}
	}
	if n := idjag.MetadataFetches(); n < 1 {
		t.Fatalf("the ID-JAG issuer's metadata was never fetched")
	}
	if n := client.JWKSFetches(); n != 0 {
		t.Fatalf("Ready fetched a client's jwks_uri %d times", n)
	}
	idjag.SetStatus(http.StatusServiceUnavailable)
	h.clock.Advance(2 * time.Hour)
	err := h.as.Ready(ctx)
	if err == nil || !strings.Contains(err.Error(), "trusted issuer "+idjag.Issuer) {
		t.Fatalf("Ready with the ID-JAG issuer's set stale and down = %v, want it named", err)
	}
}

// TestReadyNothingToCheck: a server with no upstream login and no
// fetched trusted keys is ready without a request.
func TestReadyNothingToCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	if c := h.as.ReadyChecks(); len(c) != 0 {
		t.Fatalf("ReadyChecks = %+v, want none", c)
	}
	if err := h.as.Ready(context.Background()); err != nil {
		t.Fatalf("Ready = %v", err)
	}
}

// TestTrustedKeySetsNotDropped: a flood of clients' jwks_uri beyond
// MaxSets drops (and closes) clients' sets, never a trusted issuer's.
func TestTrustedKeySetsNotDropped(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	trusted := oauthtest.NewPlainJWKSServer(t, key)
	sets := newRemoteKeySets(KeyFetchConfig{InsecureAllowHTTPLoopback: true, MaxSets: 1}, newClock().Now)
	defer sets.Close()
	src, err := sets.trusted(trusted.Issuer, trusted.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := sets.source(fmt.Sprintf("http://127.0.0.1:1/client-%d/jwks", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Keys(context.Background(), "k1"); err != nil {
		t.Fatalf("the trusted issuer's keys after the flood: %v", err)
	}
	if err := sets.ready(context.Background()); err != nil {
		t.Fatalf("ready: %v", err)
	}
	again, err := sets.trusted(trusted.Issuer, trusted.JWKSURI)
	if err != nil || again != src {
		t.Fatalf("trusted again: %v %v, want the same set", again, err)
	}
}
