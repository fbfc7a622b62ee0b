// Package clientmeta implements OAuth Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document, pinned at -00 by the MCP
// specification 2026-07-28, "Client Registration" §Client ID Metadata
// Documents, with the stricter fetch rules of -01) for both sides of MCP
// authorization:
//
//   - Authorization servers use a [Resolver] to turn a URL client_id into
//     validated client metadata. The client_id is hostile input: URL rules
//     ([ValidateClientID]) and an optional [TrustPolicy] such as
//     [AllowHosts] are checked before the cache and before one bounded,
//     SSRF-guarded fetch; the document must pass [ParseDocument].
//   - Clients use a [Handler] to host their own document; [NewHandler]
//     refuses a document that breaks the rules and serves it with an ETag
//     and Cache-Control.
//
// Usage on an authorization server:
//
//	r, err := clientmeta.NewResolver(clientmeta.ResolverConfig{
//		TrustPolicy: clientmeta.AllowHosts("app.example.com"),
//	})
//	doc, err := r.Resolve(ctx, clientID) // errors.Is(err, clientmeta.ErrFetch) ...
//
// For local development, [ResolverConfig.InsecureLoopbackMappings] lets a
// production-shaped https client_id be fetched from a loopback origin; it is
// empty by default and then loopback addresses are refused like any other
// special-use address.
//
// The package deliberately does not: match redirect URIs (the authorization
// server does that, exactly), parse the keys of jwks or fetch jwks_uri (the
// authorization server does, for private_key_jwt; an inline jwks is only
// checked to be a JWK Set without private or symmetric key material),
// fetch logo_uri, authenticate clients, or implement Dynamic Client
// Registration.
package clientmeta
