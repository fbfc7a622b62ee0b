// Package resource is the MCP resource-server side of mcpauth: middleware
// that protects a Streamable HTTP MCP endpoint with OAuth 2.1 bearer
// tokens, as the MCP specification 2026-07-28 ("Authorization") requires,
// and optionally with DPoP-bound tokens (RFC 9449).
//
// Three lines protect a handler of the official Go MCP SDK:
//
//	v, err := resource.New(resource.Config{Resource: "https://mcp.example.com/mcp",
//		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com"}}})
//	defer v.Close()
//	v.Mount(mux, mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true}))
//
// One [Config] drives [Verifier.Verify], [Verifier.Middleware] and
// [Verifier.MetadataHandler], so the challenges and the metadata cannot
// disagree. It implements:
//
//   - RFC 9728 protected resource metadata at the path-inserted well-known
//     URL (§3.1), and resource_metadata in every 401 and 403 challenge
//     (§5.1; requirements RS-01…RS-04, RS-25).
//   - RFC 6750 bearer challenges from one function: 401 without error when
//     no credentials were sent, 401 invalid_token, 400 invalid_request,
//     403 insufficient_scope naming every scope the operation needs, 503
//     when keys are unavailable (RS-05…RS-07, RS-12, RS-16, RS-17).
//   - RFC 9068 JWT access tokens checked per RFC 8725 with go-jose: typ
//     at+jwt, an asymmetric algorithm allowlist bound to the key type, exact
//     issuer, audience bound to the canonical resource (RFC 8707), required
//     exp, nbf/iat with leeway; jku, x5u and embedded jwk headers are never
//     used; sender-constrained tokens (cnf) are refused as bearer tokens
//     (RS-08…RS-10, RS-18).
//   - RFC 9449 DPoP ([DPoPConfig]), disabled by default, allowed beside
//     Bearer, or required: the "DPoP" scheme for tokens whose "cnf"."jkt"
//     names the key of the request's one DPoP proof; the proof checked
//     through internal/dpop for every request, even when the token comes
//     from the cache (signature with the embedded key, typ, alg, htm, htu
//     against the configured resource, iat window, ath, jti replay in a
//     bounded store); optional server nonces (DPoP-Nonce,
//     use_dpop_nonce); challenges per §7.1 and §7.2 (a DPoP challenge with
//     algs beside the Bearer one, the error on the scheme the request
//     used); dpop_signing_alg_values_supported and
//     dpop_bound_access_tokens_required in the metadata; the binding in
//     [TokenInfo].JKT and the outcome in [Event].DPoP. Introspected tokens
//     with cnf.jkt (§6.2) are handled the same way.
//   - Keys through the one-method [KeySource] seam: [StaticKeys], and
//     [RemoteKeys], a JWK Set from the issuer's validated RFC 8414 metadata,
//     fetched through mcpauth's SSRF-safe fetcher and cached with jwx's
//     jwk.Cache (background refresh by cache headers, rate-limited shared
//     refetch on unknown kid, last good keys kept).
//   - RFC 7662 introspection of opaque tokens, client-authenticated, with
//     positive and negative caching, failing closed (RS-11).
//   - A scope [Policy] per JSON-RPC method, tool, resource and prompt with
//     implied scopes, decided from the parsed, size-bounded body after the
//     Mcp-Method/Mcp-Name headers are checked against it (RS-12…RS-15,
//     TR-05).
//   - No token passthrough: Authorization is removed before the wrapped
//     handler, the identity is in the context ([TokenInfoFromContext]),
//     and [Verifier.GuardTransport] refuses outbound requests carrying an
//     inbound token (RS-19).
//   - Per-request authentication (RS-20), the Origin allowlist checked
//     before anything else (TR-01, TR-11), CORS exposure of
//     WWW-Authenticate (RS-26), an audit hook ([Event]) and a bounded
//     verified-token cache.
//
// It deliberately does not: issue tokens, implement mutual-TLS binding
// (such tokens are refused), check DPoP proofs outside the middleware
// ([Verifier.Verify] refuses bound tokens, having no request to check a
// proof against), send a new DPoP nonce with successful responses (a
// client learns a rotated nonce from one use_dpop_nonce retry), manage MCP
// sessions, or decide what a tool may return to whom beyond scopes
// ([Verifier.Grants] helps handlers do that). Token values never appear
// in errors, logs, audit events or response bodies.
package resource
