package authserver_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// An authorization server with every extension: DPoP with nonces, a
// client_credentials client with private_key_jwt, workload identity and
// ID-JAG grants from trusted issuers, and the IdP role issuing ID-JAGs.
func ExampleConfig_extensions() {
	platform, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:tools"},
		DPoP:   &authserver.DPoPConfig{RequireNonce: true},
		Clients: []authserver.Client{{
			ID:         "svc",
			JWKSURI:    "https://svc.example.com/jwks.json",
			GrantTypes: []string{oauthmeta.GrantTypeClientCredentials},
		}},
		TrustedIssuers: []authserver.TrustedIssuer{
			{Issuer: "https://oidc.platform.example.com", PublicKeys: []crypto.PublicKey{&platform.PublicKey},
				Rules: []authserver.WorkloadRule{{Subject: "system:serviceaccount:agents:*",
					Resources: []string{"https://mcp.example.com/mcp"}, Scopes: []string{"mcp:tools"}}}},
			{Issuer: "https://idp.example.com", Kind: authserver.GrantIDJAG, JWKSURI: "https://idp.example.com/jwks.json"},
		},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	m := as.Metadata()
	fmt.Println(m.GrantTypesSupported)
	fmt.Println(m.TokenEndpointAuthMethodsSupported)
	fmt.Println(m.DPoPSigningAlgValuesSupported)
	// Output:
	// [authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:jwt-bearer]
	// [none client_secret_basic client_secret_post private_key_jwt]
	// [ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA]
}

// The identity provider role of Enterprise-Managed Authorization: ID
// tokens of the company's OpenID provider become ID-JAGs for the MCP
// server's authorization server.
func ExampleIdentityProviderConfig() {
	sso, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as, err := authserver.New(authserver.Config{
		Issuer:  "https://idp.example.com",
		Clients: []authserver.Client{{ID: "chat-app", Secret: "s3cret", GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}}},
		IdentityProvider: &authserver.IdentityProviderConfig{
			IDTokenIssuers: []authserver.TrustedIssuer{{Issuer: "https://sso.example.com", PublicKeys: []crypto.PublicKey{&sso.PublicKey}}},
			Audiences: []authserver.IDJAGAudience{{
				Issuer:    "https://auth.mcp.example.com",
				ClientIDs: map[string]string{"chat-app": "chat-app-at-mcp"},
			}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	m := as.Metadata()
	fmt.Println(m.SupportsGrantType(oauthmeta.GrantTypeTokenExchange))
	// Output: true
}

// A downstream API for which the MCP server (the confidential client
// "mcp-server", whose resource is https://mcp.example.com/mcp) may obtain
// short-lived tokens of its own, acting for the user, by the token
// exchange of the MCP access tokens it receives.
func ExampleDownstreamAPI() {
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:tools", "calendar:read"},
		Clients: []authserver.Client{{
			ID: "mcp-server", Secret: "from-a-secret-store",
			GrantTypes: []string{oauthmeta.GrantTypeTokenExchange},
		}},
		DownstreamAPIs: []authserver.DownstreamAPI{{
			Resource: "https://calendar.example.com/api",
			Scopes:   []string{"calendar:read"},
			Clients:  map[string]string{"mcp-server": "https://mcp.example.com/mcp"},
			TokenTTL: 2 * time.Minute,
		}},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.Metadata().GrantTypesSupported)
	// Output:
	// [authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:token-exchange]
}
