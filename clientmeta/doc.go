// Package clientmeta implements OAuth Client ID Metadata Documents
// (draft-ietf-oauth-client-id-metadata-document, pinned at -00 by the MCP
// specification 2026-07-28, "Client Registration" §Client ID Metadata
// Documents, with the stricter fetch rules of -01) for both sides of MCP
// authorization:
//
//   - Authorization servers use a [Resolver] to turn a URL client_id into
//     validated client metadata. The client_id is hostile input: the URL
//     rules are checked first ([ValidateClientID], requirement CIMD-01),
//     then an optional [TrustPolicy] such as [AllowHosts] (CIMD-11), then
//     the cache, and only then one fetch through mcpauth's SSRF-safe fetcher:
//     https only, special-use addresses refused at dial time, no redirects,
//     only 200, at most 5 KB, 5 s, a JSON content type (CIMD-04, CIMD-05).
//     The document must be one JSON object whose client_id is identical to
//     the URL, with client_name and redirect_uris and no shared secret
//     (token_endpoint_auth_method none, or private_key_jwt with exactly one
//     of jwks and jwks_uri; [ParseDocument], CIMD-02, CIMD-03). Valid documents are cached as
//     their HTTP cache headers say, for at most 24 h; failures never are
//     (CIMD-06).
//   - Clients use a [Handler] to host their own document; [NewHandler]
//     refuses a document that breaks the rules above (CIMD-12) and serves it
//     with an ETag and Cache-Control.
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
//
// Requirement IDs (CIMD-nn, AS-nn) refer to docs/requirements.md.
package clientmeta
