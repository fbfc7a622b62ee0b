package upstream_test

import (
	"fmt"

	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// Users of two Microsoft Entra ID tenants log in through the
// organizations endpoint; users of any other tenant are refused.
func ExampleMultiTenant() {
	c, err := upstream.Preset(upstream.PresetEntra, "organizations")
	if err != nil {
		panic(err)
	}
	c.ClientID, c.ClientSecret = "11111111-2222-3333-4444-555555555555", "from-a-secret-store"
	c.MultiTenant.Tenants = []string{"72f988bf-86f1-41af-91ab-2d7cd011db47", "0b5a1e6c-3f4d-4e2a-9c8b-7d6e5f4a3b2c"}
	entra, err := upstream.New(*c)
	if err != nil {
		panic(err)
	}
	defer entra.Close()
	fmt.Println(entra.Issuer())
	fmt.Println(c.MultiTenant.IssuerTemplate)
	// Output:
	// https://login.microsoftonline.com/organizations/v2.0
	// https://login.microsoftonline.com/{tenantid}/v2.0
}
