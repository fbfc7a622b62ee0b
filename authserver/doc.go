// Package authserver is a strict OAuth 2.1 authorization server for the
// Model Context Protocol (specification 2026-07-28, "Authorization"): the
// endpoints MCP clients use (metadata, authorization with consent, token,
// registration, introspection, revocation, JWK Set), its own RFC 9068 JWT
// access tokens, optional DPoP, and a broker that logs users in at the
// identity provider they have and keeps that provider's tokens sealed.
//
// Start one with [New] and mount the [Server] at the root of the issuer's
// origin; only [Config.Issuer] is required:
//
//	as, err := authserver.New(authserver.Config{
//		Issuer:  "https://as.example.com",
//		Consent: authserver.ConsentPrompt,
//		Scopes:  []string{"mcp:read", "mcp:write"},
//	})
//	if err != nil { ... }
//	defer as.Close()
//	http.ListenAndServeTLS(":443", cert, key, as)
//
// [Server] lists what it implements and what it deliberately does not.
// Records live in a [Storage], in memory by default ([MemoryStore]); the
// packages boltstore (one file) and pgstore (PostgreSQL, shared by
// replicas) hold them durably. Logins at an identity provider go through
// a [Login] and their tokens through a [Vault]; package upstream has both
// for OpenID Connect and plain OAuth 2.0 providers. Package
// authservertest starts a server in a test and can make it misbehave on
// purpose.
//
// Protocol errors sent to clients are *oauthmeta.Error values; the errors
// of this package are for the Go API.
package authserver
