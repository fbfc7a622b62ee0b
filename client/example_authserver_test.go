package client_test

import (
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/client"
)

// Per-issuer options for Microsoft Entra ID: its metadata omits
// code_challenge_methods_supported although it accepts S256, its v2.0
// endpoint refuses the resource parameter, and it wants the API as the
// scope "{Application ID URI}/.default". A "/.default" scope combined
// with another is refused.
func ExampleAuthServerOptions() {
	const entra = "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"
	c, err := client.New(client.Config{
		Authorizer: &client.Loopback{},
		AuthServers: map[string]client.AuthServerOptions{entra: {
			AssumeS256:     true,
			OmitResource:   true,
			ResourceScopes: []string{"api://6e74172b-be56-4843-9ff4-e66a39bb12e3/.default"},
		}},
	})
	fmt.Println(c != nil, err)
	_, err = client.New(client.Config{
		Authorizer: &client.Loopback{},
		AuthServers: map[string]client.AuthServerOptions{entra: {
			ResourceScopes: []string{"api://6e74172b-be56-4843-9ff4-e66a39bb12e3/.default", "User.Read"},
		}},
	})
	fmt.Println(errors.Is(err, client.ErrConfig))
	// Output:
	// true <nil>
	// true
}
