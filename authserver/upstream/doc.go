// Package upstream logs the users of an [authserver.Server] in at an
// identity provider, and keeps the provider's tokens for the token
// exchange: the [authserver.Login] and [authserver.Vault] the server's
// configuration takes.
//
// [New] returns the login at an OpenID Connect provider (Okta, Keycloak,
// Auth0, Google, Entra, ...), found by discovery from its issuer, or at a
// plain OAuth 2.0 provider such as GitHub ([OAuth2Endpoints]). [Preset]
// fills the provider-specific fields for GitHub, Google and Microsoft
// Entra ID, one tenant or several ([MultiTenant]). [VaultConfig.Open]
// makes the vault:
//
//	p, err := upstream.New(upstream.Config{Issuer: "https://idp.example", ClientID: "mcp", ClientSecret: secret})
//	// handle err; defer p.Close()
//	as, err := authserver.New(authserver.Config{
//		Issuer: "https://as.example", Scopes: []string{"mcp:read"},
//		Login: p, Allow: authserver.AllowList{EmailDomains: []string{"example.com"}},
//		Vault: upstream.VaultConfig{Keys: keys, Provider: p}.Open,
//	})
//
// Register the server's UpstreamCallbackURL as the redirect URI of the
// client at the provider. The server then issues its own codes and tokens
// for the subject [Subject] of the provider's (issuer, sub).
package upstream
