package upstream_test

import (
	"bytes"
	"fmt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// Users log in at the company's OpenID provider or at GitHub: those with
// an address at example.com always at the company's (their home realm),
// others choose on the server's page. Each provider has its own redirect
// URI and allow-list; one vault keeps the tokens of both.
func ExampleVaultConfig_providers() {
	corp, err := upstream.New(upstream.Config{Issuer: "https://login.example.com", ClientID: "mcp",
		ClientSecret: "from-a-secret-store"})
	if err != nil {
		panic(err)
	}
	defer corp.Close()
	gc, err := upstream.Preset(upstream.PresetGitHub, "")
	if err != nil {
		panic(err)
	}
	gc.ClientID, gc.ClientSecret = "Iv1.0123456789abcdef", "from-a-secret-store"
	github, err := upstream.New(*gc)
	if err != nil {
		panic(err)
	}
	defer github.Close()
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:read"},
		Logins: []authserver.LoginProvider{
			{Name: "corp", Label: "Example Corp", Login: corp,
				Allow: authserver.AllowList{EmailDomains: []string{"example.com"}}},
			{Name: "github", Label: "GitHub", Login: github,
				Allow: authserver.AllowList{Users: []string{"583231"}}},
		},
		HomeRealms: map[string]string{"example.com": "corp"},
		Vault: upstream.VaultConfig{Keys: [][]byte{bytes.Repeat([]byte{1}, 32)},
			Providers: []upstream.Provider{corp, github}}.Open,
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.UpstreamCallbackURLFor("corp"))
	fmt.Println(as.UpstreamCallbackURLFor("github"))
	// Output:
	// https://auth.example.com/upstream/callback/corp
	// https://auth.example.com/upstream/callback/github
}
