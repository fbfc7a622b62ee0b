package client_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
)

// A client that requests DPoP-bound tokens (RFC 9449) and presents them
// through the go-sdk: the handler's HTTP client turns the SDK's Bearer
// header into the DPoP scheme with a fresh proof.
func ExampleDPoPConfig() {
	c := must(client.New(client.Config{
		Authorizer: &client.Loopback{},
		DPoP:       &client.DPoPConfig{}, // a P-256 key for this Client; or Key: a KMS-backed crypto.Signer
	}))
	serverURL := "https://mcp.example.com/mcp"
	h := must(c.OAuthHandler(serverURL))
	transport := &mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: h, HTTPClient: h.HTTPClient(nil)}
	_ = transport // mcp.NewClient(impl, nil).Connect(ctx, transport, nil)
}

// OAuthHandler.HTTPClient is the SDK's HTTP client for DPoP-bound tokens.
func ExampleOAuthHandler_HTTPClient() {
	c := must(client.New(client.Config{Authorizer: &client.Loopback{}, DPoP: &client.DPoPConfig{}}))
	h := must(c.OAuthHandler("https://mcp.example.com/mcp"))
	hc := h.HTTPClient(nil)
	fmt.Println(hc.Transport != nil)
	// Output: true
}

// A machine client with the client credentials grant, authenticated by
// private_key_jwt (RFC 7523): discovery as usual, then a token request
// with a signed assertion addressed to the authorization server's issuer.
func ExampleClientCredentials() {
	pemKey, _ := os.ReadFile("/etc/mcp-agent/key.pem") // PKCS #8, SEC 1 or PKCS #1
	c, err := client.New(client.Config{Grant: &client.ClientCredentials{
		Credentials: client.Credentials{ClientID: "svc", PrivateKeyPEM: pemKey, KeyID: "svc-key-1"},
	}})
	if err != nil {
		fmt.Println("configuration:", err) // no key file here
		return
	}
	_ = must(c.Transport("https://mcp.example.com/mcp", nil))
}

// Workload identity federation: the platform token is read from a file on
// every grant and checked for its audience before it is sent.
func ExampleWorkloadIdentity() {
	c, err := client.New(client.Config{Grant: &client.WorkloadIdentity{
		AssertionFile: "/var/run/secrets/tokens/mcp-token",
		Scopes:        []string{"mcp:tools"},
	}})
	fmt.Println(c != nil, err)
	// Output: true <nil>
}

// Enterprise-Managed Authorization: the user's ID token from the company
// IdP becomes an ID-JAG for the MCP server's authorization server.
func ExampleEnterpriseAuthorization() {
	c, err := client.New(client.Config{Grant: &client.EnterpriseAuthorization{
		IdPTokenEndpoint: "https://idp.example.com/oauth2/token",
		IdPCredentials:   client.Credentials{ClientID: "app-at-idp", ClientSecret: os.Getenv("IDP_SECRET")},
		IDToken:          func(ctx context.Context) (string, error) { return "<ID token from the IdP's SSO>", nil },
		Issuer:           "https://auth.mcp.example.com",
		Credentials:      client.Credentials{ClientID: "app-at-mcp", PrivateKey: exampleKey()},
	}})
	fmt.Println(c != nil, err)
	// Output: true <nil>
}

func exampleKey() crypto.Signer {
	return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
}
