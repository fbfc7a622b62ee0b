package upstream_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// Users log in at an OpenID Connect provider and connect their GitHub
// account for the MCP server "mcp-server", which then gets their GitHub
// token by token exchange with audience "github" (or a connect_uri to
// send them to). Register ConnectCallbackURL at GitHub.
func ExampleVaultConfig_connect() {
	key := bytes.Repeat([]byte{1}, 32) // from your secret store
	idp, err := upstream.New(upstream.Config{Issuer: "https://example.okta.com", ClientID: "0oa1b2c3d4",
		ClientSecret: "from-a-secret-store"})
	if err != nil {
		panic(err)
	}
	defer idp.Close()
	c, err := upstream.Preset(upstream.PresetGitHub, "")
	if err != nil {
		panic(err)
	}
	c.ClientID, c.ClientSecret, c.Scopes = "Iv1.0123456789abcdef", "from-a-secret-store", []string{"repo"}
	github, err := upstream.New(*c)
	if err != nil {
		panic(err)
	}
	defer github.Close()
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:read"},
		Clients: []authserver.Client{{ID: "mcp-server", Secret: "rs-secret-0123456789",
			GrantTypes: []string{"urn:ietf:params:oauth:grant-type:token-exchange"}}},
		Login:                idp,
		Allow:                authserver.AllowList{Groups: []string{"mcp-users"}},
		VaultResourceServers: map[string]string{"mcp-server": "https://mcp.example.com/mcp"},
		Connect: []authserver.ConnectProvider{{Name: "github", DisplayName: "GitHub", Login: github,
			Vault: upstream.VaultConfig{Keys: [][]byte{key}, Provider: github}.Open}},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.ConnectProviders(), as.ConnectCallbackURL())
	// An operator removes a user's connection (users do it at
	// /connect/github/disconnect).
	fmt.Println(as.Disconnect(context.Background(), "u-someone", "github"))
	// Output:
	// [github] https://auth.example.com/connect/callback
	// <nil>
}
