package main

import (
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

func TestUpstreamFlags(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"IDP_SECRET": "s3cret"}[k] }
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"none", nil, ""},
		{"domain", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "env:IDP_SECRET", "--allow-email-domain", "example.com"}, ""},
		{"any user", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--allow-any-user"}, ""},
		{"no allow-list", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c"}, "say who may log in"},
		{"literal secret", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "s3cret", "--allow-any-user"}, "env:VAR"},
		{"empty env", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "env:NOPE", "--allow-any-user"}, "NOPE is empty"},
		{"allow without upstream", []string{"--allow-user", "a@example.com"}, "need --upstream"},
		{"key file missing", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-key", "/nonexistent/key.pem", "--allow-any-user"}, "--upstream-client-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(false, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "domain" && (c.ClientSecret != "s3cret" || !slices.Equal(c.Allow.EmailDomains, []string{"example.com"})) {
				t.Errorf("config %+v", c)
			}
		})
	}
	// The whole configuration is accepted by authserver.New's rules.
	f, _ := parseAuthserverFlags([]string{"--insecure-http", "--upstream", "http://127.0.0.1:9/idp", "--upstream-client-id", "c", "--allow-group", "staff"}, io.Discard)
	cfg, err := f.config(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}, nil)
	if err != nil || cfg.Login == nil || cfg.Login.Issuer() != "http://127.0.0.1:9/idp" || cfg.Vault == nil {
		t.Fatalf("config: %v %+v", err, cfg.Login)
	}
	closeLogin(&cfg)
	// A multi-tenant Entra login reaches upstream.New with its tenants,
	// whose rules refuse an entry that is not a tenant ID.
	for tenant, wantErr := range map[string]bool{"72F988BF-86F1-41AF-91AB-2D7CD011DB47": false, "contoso.com": true} {
		f, _ := parseAuthserverFlags([]string{"--insecure-http", "--upstream", "entra", "--upstream-tenant", "organizations",
			"--upstream-allow-tenant", tenant, "--upstream-client-id", "c", "--allow-any-user"}, io.Discard)
		cfg, err := f.config(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}, nil)
		if (err != nil) != wantErr || err == nil && cfg.Login.Issuer() != "https://login.microsoftonline.com/organizations/v2.0" {
			t.Errorf("--upstream-allow-tenant %s: %v", tenant, err)
		}
		if err == nil {
			closeLogin(&cfg)
		}
	}
}

// TestUpstreamPresetFlags: --upstream github|google|entra fills the
// provider's URLs (no network), and the github endpoints can be pointed
// elsewhere.
func TestUpstreamPresetFlags(t *testing.T) {
	common := []string{"--upstream-client-id", "c", "--allow-any-user"}
	tests := []struct {
		name       string
		args       []string
		wantIssuer string
		wantUser   string // the user-info endpoint; "" means OpenID Connect
		wantErr    string
	}{
		{"github", []string{"--upstream", "github"}, "https://github.com", "https://api.github.com/user", ""},
		{"github overridden", []string{"--upstream", "github", "--upstream-userinfo-url", "http://127.0.0.1:9/api/user",
			"--upstream-authorization-url", "http://127.0.0.1:9/a", "--upstream-token-url", "http://127.0.0.1:9/t",
			"--upstream-emails-url", "http://127.0.0.1:9/api/user/emails"}, "https://github.com", "http://127.0.0.1:9/api/user", ""},
		{"google", []string{"--upstream", "google"}, "https://accounts.google.com", "", ""},
		{"entra", []string{"--upstream", "entra", "--upstream-tenant", "contoso.onmicrosoft.com"},
			"https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0", "", ""},
		{"entra without tenant", []string{"--upstream", "entra"}, "", "", "needs a tenant"},
		{"entra multi-tenant", []string{"--upstream", "entra", "--upstream-tenant", "organizations",
			"--upstream-allow-tenant", "72f988bf-86f1-41af-91ab-2d7cd011db47", "--upstream-allow-tenant", "0b5a1e6c-3f4d-4e2a-9c8b-7d6e5f4a3b2c"},
			"https://login.microsoftonline.com/organizations/v2.0", "", ""},
		{"entra multi-tenant without tenants", []string{"--upstream", "entra", "--upstream-tenant", "common"}, "", "", "--upstream-allow-tenant"},
		{"allowed tenant for one tenant", []string{"--upstream", "entra", "--upstream-tenant", "contoso.onmicrosoft.com",
			"--upstream-allow-tenant", "72f988bf-86f1-41af-91ab-2d7cd011db47"}, "", "", "is for --upstream entra with --upstream-tenant organizations"},
		{"allowed tenant without upstream", []string{"--upstream-allow-tenant", "72f988bf-86f1-41af-91ab-2d7cd011db47"}, "", "", "need --upstream"},
		{"tenant for google", []string{"--upstream", "google", "--upstream-tenant", "x"}, "", "", "only for the entra preset"},
		{"override for OIDC", []string{"--upstream", "google", "--upstream-token-url", "https://x.example/t"}, "", "", "for --upstream github only"},
		{"unknown preset", []string{"--upstream", "gitlab"}, "", "", "neither github"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(append(tc.args, common...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(true, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var user string
			if c.OAuth2 != nil {
				user = c.OAuth2.UserInfoEndpoint
			}
			if c.Issuer != tc.wantIssuer || user != tc.wantUser || c.ClientID != "c" {
				t.Errorf("config issuer %q, user-info %q, client %q", c.Issuer, user, c.ClientID)
			}
			if mt := c.MultiTenant; (mt != nil) != (tc.name == "entra multi-tenant") || mt != nil && len(mt.Tenants) != 2 {
				t.Errorf("multi-tenant config %+v", mt)
			}
			if tc.name == "github overridden" && (c.OAuth2.TokenEndpoint != "http://127.0.0.1:9/t" ||
				c.OAuth2.EmailsEndpoint != "http://127.0.0.1:9/api/user/emails" || c.OAuth2.AuthorizationEndpoint != "http://127.0.0.1:9/a") {
				t.Errorf("overrides not applied: %+v", c.OAuth2)
			}
		})
	}
}

func TestGrantPolicyFlag(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"default":["mcp:read"],"grups":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"example file", []string{"--upstream", "github", "--upstream-client-id", "c", "--allow-any-user", "--grant-policy", "../../authserver/testdata/grant-policy.json"}, ""},
		{"unknown member", []string{"--upstream", "github", "--upstream-client-id", "c", "--allow-any-user", "--grant-policy", bad}, "unknown name at /grups"},
		{"missing file", []string{"--upstream", "github", "--upstream-client-id", "c", "--allow-any-user", "--grant-policy", bad + ".nope"}, "--grant-policy"},
		{"without upstream", []string{"--grant-policy", bad}, "need --upstream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(false, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || c.GrantPolicy == nil || len(c.GrantPolicy.Groups["mcp-admins"]) != 2 {
				t.Fatalf("config: %v %+v", err, c)
			}
		})
	}
}

// TestAllowFlagsParsedAtStart: an --allow-user, --allow-email-domain,
// --allow-group or grant policy entry that is not an accepted address,
// domain name, identifier or group name stops the server at start-up
// instead of becoming a rule that admits a crafted address.
func TestAllowFlagsParsedAtStart(t *testing.T) {
	policy := func(json string) string {
		p := filepath.Join(t.TempDir(), "policy.json")
		if err := os.WriteFile(p, []byte(json), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"--insecure-http", "--upstream", "https://idp.example", "--upstream-client-id", "c"}
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"accepted", []string{"--allow-user", "BOSS@Partner.org", "--allow-user", "583231", "--allow-email-domain", "EXAMPLE.com", "--allow-group", "staff"}, true},
		{"user with two @", []string{"--allow-user", "attacker@evil.com@example.com"}, false},
		{"user with long s", []string{"--allow-user", "boſſ@partner.org"}, false},
		{"user with percent", []string{"--allow-user", "a%40evil.com@example.com"}, false},
		{"domain with Cyrillic а", []string{"--allow-email-domain", "exаmple.com"}, false},
		{"domain with @", []string{"--allow-email-domain", "@example.com"}, false},
		{"domain with trailing dot", []string{"--allow-email-domain", "example.com."}, false},
		{"empty group", []string{"--allow-group", ""}, false},
		{"policy domain", []string{"--allow-any-user", "--grant-policy", policy(`{"email_domains":{"exаmple.com":["mcp:tools"]}}`)}, false},
		{"policy user", []string{"--allow-any-user", "--grant-policy", policy(`{"users":{"a@example.com\u0000@evil.com":["mcp:tools"]}}`)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := authserverConfig(t, append(slices.Clone(base), tc.args...))
			if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, authserver.ErrConfig) || !strings.Contains(err.Error(), "is not a")) {
				t.Fatalf("err = %v, want accepted %v (else a configuration error naming the entry)", err, tc.ok)
			}
		})
	}
}

// TestUpstreamAuthParamFlag: --upstream-auth-param adds to or replaces
// the preset's authorization parameters; malformed ones and the login's
// own are refused.
func TestUpstreamAuthParamFlag(t *testing.T) {
	common := []string{"--upstream-client-id", "c", "--allow-any-user"}
	tests := []struct {
		name    string
		args    []string
		want    map[string]string
		wantErr string
	}{
		{"google preset", []string{"--upstream", "google"}, map[string]string{"access_type": "offline", "prompt": "consent"}, ""},
		{"replaced and added", []string{"--upstream", "google", "--upstream-auth-param", "prompt=select_account consent",
			"--upstream-auth-param", "hd=example.com"}, map[string]string{"access_type": "offline", "prompt": "select_account consent", "hd": "example.com"}, ""},
		{"issuer", []string{"--upstream", "https://idp.example", "--upstream-auth-param", "kc_idp_hint=corp"}, map[string]string{"kc_idp_hint": "corp"}, ""},
		{"empty value", []string{"--upstream", "https://idp.example", "--upstream-auth-param", "prompt="}, map[string]string{"prompt": ""}, ""},
		{"no equals", []string{"--upstream", "google", "--upstream-auth-param", "prompt"}, nil, "not NAME=VALUE"},
		{"no name", []string{"--upstream", "google", "--upstream-auth-param", "=x"}, nil, "not NAME=VALUE"},
		{"owned", []string{"--upstream", "google", "--upstream-auth-param", "redirect_uri=https://evil.example/cb"}, nil, "set by the login itself"},
		{"control", []string{"--upstream", "google", "--upstream-auth-param", "prompt=a\nb"}, nil, "control characters"},
		{"without upstream", []string{"--upstream-auth-param", "prompt=consent"}, nil, "need --upstream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name != "without upstream" {
				args = append(args, common...)
			}
			f, err := parseAuthserverFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(false, nil)
			if err == nil && c != nil {
				// upstream.New's checks, as at start.
				var p interface{ Close() error }
				p, err = upstream.New(c.Config)
				if err == nil {
					_ = p.Close()
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.AuthParams, tc.want) {
				t.Errorf("AuthParams = %v, want %v", c.AuthParams, tc.want)
			}
		})
	}
}

// TestUpstreamGitHubAllowFlags: --upstream-github-org and
// --upstream-github-team set the github membership rule, for github only.
func TestUpstreamGitHubAllowFlags(t *testing.T) {
	common := []string{"--upstream-client-id", "c", "--allow-any-user"}
	tests := []struct {
		name        string
		args        []string
		orgs, teams []string
		wantErr     string
	}{
		{"none", []string{"--upstream", "github"}, nil, nil, ""},
		{"orgs and teams", []string{"--upstream", "github", "--upstream-github-org", "acme", "--upstream-github-org", "Umbrella",
			"--upstream-github-team", "acme/platform"}, []string{"acme", "Umbrella"}, []string{"acme/platform"}, ""},
		{"not github", []string{"--upstream", "google", "--upstream-github-org", "acme"}, nil, nil, "for --upstream github only"},
		{"bad org", []string{"--upstream", "github", "--upstream-github-org", "a\u0441me"}, nil, nil, "not a GitHub organisation login"},
		{"bad team", []string{"--upstream", "github", "--upstream-github-team", "platform"}, nil, nil, "not org/team-slug"},
		{"without upstream", []string{"--upstream-github-team", "acme/platform"}, nil, nil, "need --upstream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name != "without upstream" {
				args = append(args, common...)
			}
			f, err := parseAuthserverFlags(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(false, nil)
			if err == nil && c != nil {
				// upstream.New's checks, as at start.
				var p interface{ Close() error }
				if p, err = upstream.New(c.Config); err == nil {
					_ = p.Close()
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.orgs == nil && tc.teams == nil {
				if c.OAuth2.GitHubAllow != nil {
					t.Errorf("GitHubAllow = %+v, want none", c.OAuth2.GitHubAllow)
				}
				return
			}
			if a := c.OAuth2.GitHubAllow; a == nil || !slices.Equal(a.Orgs, tc.orgs) || !slices.Equal(a.Teams, tc.teams) {
				t.Errorf("GitHubAllow = %+v", a)
			}
		})
	}
}
