// Package resource is the MCP resource-server side of mcpauth: middleware
// that protects a Streamable HTTP MCP endpoint with OAuth 2.1 access
// tokens, as the MCP specification ("Authorization") requires, optionally
// DPoP-bound (RFC 9449).
//
// Three lines protect a handler of the official Go MCP SDK:
//
//	v, err := resource.New(resource.Config{Resource: "https://mcp.example.com/mcp",
//		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com"}}})
//	defer v.Close()
//	v.Mount(mux, mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true}))
//
// One [Config] drives [Verifier.Verify], [Verifier.Middleware] and
// [Verifier.MetadataHandler] (RFC 9728 protected resource metadata), so
// the challenges and the metadata cannot disagree. Per request the
// middleware checks the Origin, the credentials (RFC 6750; [DPoPConfig]),
// the token (RFC 9068 JWTs, identity providers' own shapes through
// [Profile], or RFC 7662 introspection), the session ([Config.SessionKey])
// and the scopes the JSON-RPC message needs ([Policy]); the wrapped handler
// gets a copy of the request without the credentials, the identity in its
// context ([TokenInfoFromContext], and the Go SDK's auth.TokenInfo), and
// [Verifier.GuardTransport] keeps the token from being sent onwards.
//
// Keys come from a keyset.Source per [Issuer]: by default a [RemoteKeys]
// found through the issuer's metadata, or the keys of [ParseStaticKeys].
// An [Exchanger] trades the request's token for one at another service
// (RFC 8693 token exchange).
//
// Errors come in a few classes that fix the response and that callers
// branch on with errors.Is (ErrNoToken, ErrInvalidToken, ErrUnavailable,
// ...); a refusal is an [*Error] whose Reason is the fixed description that
// the challenge and the audit [Event] carry. Token values never appear in
// errors, logs, audit events or response bodies.
//
// It deliberately does not issue tokens, implement mutual-TLS binding
// (such tokens are refused), check DPoP proofs outside the middleware
// ([Verifier.Verify] refuses bound tokens), or keep MCP sessions (the
// wrapped handler does).
package resource
