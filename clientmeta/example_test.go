package clientmeta_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// An authorization server resolves URL client_ids, here only from one
// trusted host. A client_id from elsewhere is refused before any network
// I/O.
func ExampleNewResolver() {
	r, err := clientmeta.NewResolver(clientmeta.ResolverConfig{
		TrustPolicy: clientmeta.AllowHosts("app.example.com"),
	})
	if err != nil {
		panic(err)
	}
	_, err = r.Resolve(context.Background(), "https://elsewhere.example.net/client.json")
	fmt.Println(errors.Is(err, clientmeta.ErrUntrusted))
	// Output: true
}

// A client hosts its own metadata document at the URL that is its
// client_id.
func ExampleNewHandler() {
	h, err := clientmeta.NewHandler(clientmeta.HandlerConfig{
		Document: &clientmeta.Document{
			ClientID: "https://app.example.com/oauth/client.json",
			ClientMetadata: oauthmeta.ClientMetadata{
				ClientName:              "Example MCP Client",
				RedirectURIs:            []string{"http://127.0.0.1:3000/callback"},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /oauth/client.json", h)
	fmt.Println("ok")
	// Output: ok
}

func ExampleValidateClientID() {
	for _, id := range []string{
		"https://app.example.com/oauth/client.json",
		"https://app.example.com",
		"http://app.example.com/client.json",
	} {
		fmt.Println(id, clientmeta.ValidateClientID(id) == nil)
	}
	// Output:
	// https://app.example.com/oauth/client.json true
	// https://app.example.com false
	// http://app.example.com/client.json false
}

func ExampleParseDocument() {
	const id = "https://app.example.com/oauth/client.json"
	_, err := clientmeta.ParseDocument([]byte(`{"client_id":"`+id+`/","client_name":"x","redirect_uris":["https://app.example.com/cb"]}`), id)
	fmt.Println(errors.Is(err, clientmeta.ErrClientIDMismatch))
	// Output: true
}

func ExampleAllowHosts() {
	p := clientmeta.AllowHosts("*.example.com")
	r, _ := clientmeta.NewResolver(clientmeta.ResolverConfig{TrustPolicy: p})
	_, err := r.Resolve(context.Background(), "https://example.org/c.json")
	fmt.Println(errors.Is(err, clientmeta.ErrUntrusted))
	// Output: true
}
