package authserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Offer the device authorization grant (RFC 8628) to a client that runs
// where no browser is, and start one device login.
func ExampleDeviceConfig() {
	as, err := authserver.New(authserver.Config{
		Issuer:  "https://as.example.com",
		Device:  &authserver.DeviceConfig{},
		Scopes:  []string{"mcp:read"},
		Clients: []authserver.Client{{ID: "tv", GrantTypes: []string{oauthmeta.GrantTypeDeviceCode}}},
	})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	fmt.Println(as.Metadata().DeviceAuthorizationEndpoint)

	req, _ := http.NewRequest(http.MethodPost, "https://as.example.com/device_authorization",
		strings.NewReader(url.Values{"client_id": {"tv"}, "scope": {"mcp:read"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	as.ServeHTTP(rec, req)
	d, err := oauthmeta.ParseDeviceAuthorizationResponse(rec.Body.Bytes())
	if err != nil {
		panic(err)
	}
	fmt.Println(d.VerificationURI, len(d.UserCode), d.ExpiresIn, d.Interval)
	// Output:
	// https://as.example.com/device_authorization
	// https://as.example.com/device 9 600 5
}
