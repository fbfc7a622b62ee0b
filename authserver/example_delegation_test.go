package authserver_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Workload rules say which workloads of a trusted platform get tokens for
// which MCP servers: here one Kubernetes service account namespace gets
// read access to the search server, and one GitHub Actions workflow on
// main may write to the deploy server. Any other workload gets nothing.
func ExampleWorkloadRule() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	clusterKey := key.Public() // the cluster's service account issuer key
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:read", "mcp:write"},
		TrustedIssuers: []authserver.TrustedIssuer{
			{Issuer: "https://oidc.eks.example.com/id/ABC", PublicKeys: []crypto.PublicKey{clusterKey},
				Rules: []authserver.WorkloadRule{{
					Subject:   "system:serviceaccount:search:*",
					Claims:    map[string]string{"kubernetes.io/namespace": "search"},
					Resources: []string{"https://search.example.com/mcp"}, Scopes: []string{"mcp:read"},
				}}},
			{Issuer: "https://token.actions.githubusercontent.com", Discover: true,
				Rules: []authserver.WorkloadRule{{
					Claims:    map[string]string{"repository": "acme/deployer", "ref": "refs/heads/main"},
					Resources: []string{"https://deploy.example.com/mcp"}, Scopes: []string{"mcp:write"},
				}}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.Metadata().GrantTypesSupported)
	// Output: [authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:jwt-bearer]
}

// Delegation lets a host's token be exchanged for narrower tokens for its
// sub-agents, at most three hops deep; the host app's tokens may only be
// delegated to the planner agent.
func ExampleDelegationConfig() {
	as, err := authserver.New(authserver.Config{
		Issuer: "https://auth.example.com",
		Scopes: []string{"mcp:read", "mcp:write"},
		Clients: []authserver.Client{{
			ID: "planner-agent", AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT,
			JWKSURI:    "https://planner.example.com/jwks.json",
			GrantTypes: []string{oauthmeta.GrantTypeTokenExchange},
		}},
		Delegation: &authserver.DelegationConfig{
			MaxDepth: 3,
			MayAct:   map[string]oauthmeta.Actor{"host-app": {Subject: "planner-agent"}},
		},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.Metadata().GrantTypesSupported)
	// Output: [authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:token-exchange]
}
