package client

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestAuthorizationParams: an issuer's extra authorization parameters (the
// audience Ory Hydra and Auth0 read) reach its authorization request, and
// only its own; the client's own parameters stay as they were.
func TestAuthorizationParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
	// The issuer is known once the server runs; set before first use.
	e.c.cfg.AuthServers = map[string]AuthServerOptions{
		e.as.Issuer():               {AuthorizationParams: url.Values{"audience": {"https://api.example"}, "prompt": {"consent"}}},
		"https://other.example.com": {AuthorizationParams: url.Values{"domain_hint": {"example.com"}}},
	}
	if err := e.c.Login(context.Background(), e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	az := e.as.Authorizations()
	if len(az) != 1 {
		t.Fatalf("authorizations = %d, want 1", len(az))
	}
	got := az[0]
	if got.Get("audience") != "https://api.example" || got.Get("prompt") != "consent" || got.Has("domain_hint") {
		t.Errorf("extra parameters: %v", got)
	}
	if got.Get("resource") != e.rs.MCPURL() || got.Get("code_challenge_method") != "S256" || got.Get("response_type") != "code" {
		t.Errorf("the client's own parameters changed: %v", got)
	}
}

// TestAuthorizationParamsConfig: New refuses extra parameters that would
// replace one the client sets itself, or carry several values.
func TestAuthorizationParamsConfig(t *testing.T) {
	t.Parallel()
	const iss = "https://as.example.com"
	tests := []struct {
		name   string
		issuer string
		params url.Values
		ok     bool
	}{
		{"audience", iss, url.Values{"audience": {"https://api.example"}}, true},
		{"none", iss, nil, true},
		{"resource", iss, url.Values{"resource": {"https://evil.example"}}, false},
		{"redirect_uri", iss, url.Values{"redirect_uri": {"https://evil.example/cb"}}, false},
		{"code_challenge_method", iss, url.Values{"code_challenge_method": {"plain"}}, false},
		{"scope", iss, url.Values{"scope": {"admin"}}, false},
		{"state", iss, url.Values{"state": {"x"}}, false},
		{"empty name", iss, url.Values{"": {"x"}}, false},
		{"two values", iss, url.Values{"audience": {"a", "b"}}, false},
		{"no value", iss, url.Values{"audience": {}}, false},
		{"bad issuer", "http://as.example.com", url.Values{"audience": {"a"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Authorizer: &FollowRedirects{}, Store: tokenstore.NewMemory(),
				AuthServers: map[string]AuthServerOptions{tt.issuer: {AuthorizationParams: tt.params}}})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Errorf("New: %v, want ok %v", err, tt.ok)
			}
		})
	}
}
