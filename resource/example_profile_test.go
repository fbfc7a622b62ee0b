package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"log"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// signExample signs claims as an identity provider would, under the
// header type typ ("" for none).
func signExample(key *ecdsa.PrivateKey, typ string, claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithHeader("kid", "idp-key")
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		log.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	return tok
}

// A multi-tenant Entra ID application: one issuer template, the tenants
// it serves, and the API's application (client) ID, which is what v2.0
// tokens carry in "aud". The keys of each tenant come from its own
// metadata unless Keys or JWKSURI is set.
func ExampleProfile_entra() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	const tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	const api = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{
			Issuer:  "https://login.microsoftonline.com/{tid}/v2.0",
			Keys:    keyset.Static{{ID: "idp-key", Public: key.Public()}},
			Profile: resource.Profile{Preset: "entra", Audiences: []string{api}, TenantIDs: []string{tenant}},
		}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	info, err := v.Verify(context.Background(), signExample(key, "JWT", map[string]any{
		"iss": "https://login.microsoftonline.com/" + tenant + "/v2.0", "aud": api, "tid": tenant, "ver": "2.0",
		"azp": "75dbe77f-10a3-4e59-85fd-8c127544f17c", "sub": "alice", "roles": []string{"mcp.tools"},
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}))
	fmt.Println(info.ClientID, info.Tenant, info.Scopes, err)
	// Output:
	// 75dbe77f-10a3-4e59-85fd-8c127544f17c 72f988bf-86f1-41af-91ab-2d7cd011db47 [mcp.tools] <nil>
}

// Keycloak without an audience mapper issues access tokens with no "aud":
// they are accepted only with the explicit opt-in, and only from the
// clients named. (The better fix is the audience mapper, which puts the
// resource's URL in "aud"; the preset then needs nothing else.)
func ExampleProfile_keycloak() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{
			Issuer: "https://keycloak.example.com/realms/mcp",
			Keys:   keyset.Static{{ID: "idp-key", Public: key.Public()}},
			Profile: resource.Profile{Preset: "keycloak", ScopeClaims: []string{"scope", "realm_access.roles"},
				InsecureAcceptMissingAudience: true, ClientIDs: []string{"mcp-client"}},
		}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	for _, azp := range []string{"mcp-client", "other-client"} {
		info, err := v.Verify(context.Background(), signExample(key, "JWT", map[string]any{
			"iss": "https://keycloak.example.com/realms/mcp", "typ": "Bearer", "azp": azp, "sub": "alice",
			"scope": "openid mcp:tools", "realm_access": map[string]any{"roles": []string{"mcp-admin"}},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}))
		if err != nil {
			fmt.Println(azp, err)
			continue
		}
		fmt.Println(azp, info.Scopes)
	}
	// Output:
	// mcp-client [openid mcp:tools mcp-admin]
	// other-client resource: client not accepted
}

// Cognito access tokens have no "typ" header and no "aud"; "token_use"
// tells them from ID tokens, and "client_id" names the app client they
// are bound to.
func ExampleProfile_cognito() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	const pool = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE"
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{
			Issuer: pool,
			Keys:   keyset.Static{{ID: "idp-key", Public: key.Public()}},
			Profile: resource.Profile{Preset: "cognito",
				InsecureAcceptMissingAudience: true, ClientIDs: []string{"1example23456789"}},
		}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	for _, use := range []string{"access", "id"} {
		_, err := v.Verify(context.Background(), signExample(key, "", map[string]any{
			"iss": pool, "token_use": use, "client_id": "1example23456789", "sub": "alice", "scope": "mcp:tools",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}))
		fmt.Println(use, err)
	}
	// Output:
	// access <nil>
	// id resource: required claim missing or different
}

// Effective shows what a preset, with the overrides beside it, makes the
// Verifier accept.
func ExampleProfile_Effective() {
	for _, name := range resource.Presets() {
		p, err := resource.Profile{Preset: name, Audiences: []string{"api://mcp"}}.Effective()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name, p.Types, p.ScopeClaims, p.ClientClaim, p.RequiredClaims)
	}
	// Output:
	// auth0 [JWT] [scope permissions] azp []
	// cognito [none] [scope] client_id [{token_use [access]}]
	// entra [JWT] [scp roles] azp [{ver [2.0]}]
	// entra-v1 [JWT] [scp roles] appid [{ver [1.0]}]
	// hydra [JWT] [scp scope] client_id []
	// keycloak [JWT at+jwt] [scope] azp [{typ [Bearer DPoP]}]
	// okta [none] [scp] cid []
}
