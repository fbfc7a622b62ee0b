package upstream_test

import (
	"bytes"
	"fmt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// Users log in at GitHub through the github preset; a grant policy says
// which scopes each may obtain.
func ExamplePreset() {
	c, err := upstream.Preset(upstream.PresetGitHub, "")
	if err != nil {
		panic(err)
	}
	c.ClientID, c.ClientSecret = "Iv1.0123456789abcdef", "from-a-secret-store"
	github, err := upstream.New(*c)
	if err != nil {
		panic(err)
	}
	defer github.Close()
	policy, err := authserver.ParseGrantPolicy([]byte(`{
		"default": ["mcp:read"],
		"users": {"583231": ["mcp:write"]},
		"required": ["mcp:write"]}`))
	if err != nil {
		panic(err)
	}
	as, err := authserver.New(authserver.Config{
		Issuer:      "https://auth.example.com",
		Scopes:      []string{"mcp:read", "mcp:write"},
		Login:       github,
		Allow:       authserver.AllowList{EmailDomains: []string{"example.com"}},
		GrantPolicy: policy,
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(c.OAuth2.UserInfoEndpoint)
	fmt.Println(as.UpstreamCallbackURL())
	// Output:
	// https://api.github.com/user
	// https://auth.example.com/upstream/callback
}

// Users log in at an OpenID Connect provider, found by discovery at the
// first login; the vault keeps the provider's tokens, sealed, for the
// resource server "mcp-server" to obtain by token exchange.
func ExampleNew() {
	okta, err := upstream.New(upstream.Config{
		Issuer:       "https://example.okta.com",
		ClientID:     "0oa1b2c3d4",
		ClientSecret: "from-a-secret-store",
		GroupsClaim:  "groups",
	})
	if err != nil {
		panic(err)
	}
	defer okta.Close()
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:read"},
		Clients: []authserver.Client{{ID: "mcp-server", Secret: "rs-secret-0123456789",
			GrantTypes: []string{"urn:ietf:params:oauth:grant-type:token-exchange"}}},
		Login:                okta,
		Allow:                authserver.AllowList{Groups: []string{"mcp-users"}},
		Vault:                upstream.VaultConfig{Keys: [][]byte{bytes.Repeat([]byte{1}, 32)}, Provider: okta}.Open,
		VaultAudience:        "okta",
		VaultResourceServers: map[string]string{"mcp-server": "https://mcp.example.com/mcp"},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(okta.Issuer(), as.UpstreamCallbackURL())
	// Output: https://example.okta.com https://auth.example.com/upstream/callback
}

// The subject of the tokens issued for a user of a provider.
func ExampleSubject() {
	fmt.Println(upstream.Subject("https://github.com", "583231"))
	// Output: u-qbDapNQmdN61EzDNg5jQ2t66H1EBTXXZicZhrGO6EWE
}

// Only members of the acme organisation, or of umbrella's infra team, log
// in at GitHub; the platform team of acme may also write.
func ExampleGitHubAllow() {
	c, err := upstream.Preset(upstream.PresetGitHub, "")
	if err != nil {
		panic(err)
	}
	c.ClientID, c.ClientSecret = "Iv1.0123456789abcdef", "from-a-secret-store"
	c.OAuth2.GitHubAllow = &upstream.GitHubAllow{
		Orgs:  []string{"acme"},
		Teams: []string{"umbrella/infra", "acme/platform"},
	}
	github, err := upstream.New(*c)
	if err != nil {
		panic(err)
	}
	defer github.Close()
	policy, err := authserver.ParseGrantPolicy([]byte(`{
		"default": ["mcp:read"],
		"groups": {"acme/platform": ["mcp:write"]}}`))
	if err != nil {
		panic(err)
	}
	as, err := authserver.New(authserver.Config{
		Issuer:      "https://auth.example.com",
		Scopes:      []string{"mcp:read", "mcp:write"},
		Login:       github,
		Allow:       authserver.AllowList{AllowAnyUser: true},
		GrantPolicy: policy,
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.UpstreamCallbackURL())
	// Output: https://auth.example.com/upstream/callback
}

// Google returns a refresh token only for access_type=offline at the
// consent prompt: the google preset asks for both. More parameters can be
// added, here Google's hosted-domain hint.
func ExampleConfig_authParams() {
	c, err := upstream.Preset(upstream.PresetGoogle, "")
	if err != nil {
		panic(err)
	}
	c.ClientID, c.ClientSecret = "1234.apps.googleusercontent.com", "from-a-secret-store"
	c.AuthParams["hd"] = "example.com"
	google, err := upstream.New(*c)
	if err != nil {
		panic(err)
	}
	defer google.Close()
	fmt.Println(c.AuthParams["access_type"], c.AuthParams["prompt"], c.AuthParams["hd"])
	// Output: offline consent example.com
}
