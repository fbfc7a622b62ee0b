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
//     (RS-08…RS-10, RS-18). The claims are decoded and the times judged by
//     the module's one JWT rule set (case-sensitive names, duplicates
//     refused, one NumericDate range), and the algorithm and key-type rules
//     are the ones every verifier of the module applies. The JSON-RPC body
//     the policy needs is read with go-json-experiment's jsontext.Decoder;
//     a case variant or duplicate of a member the policy reads is refused,
//     as the SDK decodes with encoding/json v1, which folds case.
//   - Identity providers' own access token shapes, per issuer ([Profile]):
//     presets for Microsoft Entra ID (v2.0 and v1.0, multi-tenant through
//     an issuer template and a tenant allow-list), Okta, Auth0, Keycloak,
//     Amazon Cognito and Ory Hydra, or the token types, audiences, scope
//     and client claims and required claim values set one by one; a token
//     without an audience only with an explicit opt-in bound to named
//     clients.
//   - RFC 9449 DPoP ([DPoPConfig]), disabled by default, allowed beside
//     Bearer, or required: the "DPoP" scheme for tokens whose "cnf"."jkt"
//     names the key of the request's one DPoP proof; the proof checked
//     through package dpop for every request, even when the token comes
//     from the cache (signature with the embedded key, typ, alg, htm, htu
//     against the configured resource, iat window, ath, jti replay in a
//     bounded store); optional server nonces (DPoP-Nonce,
//     use_dpop_nonce); challenges per §7.1 and §7.2 (a DPoP challenge with
//     algs beside the Bearer one, the error on the scheme the request
//     used); dpop_signing_alg_values_supported and
//     dpop_bound_access_tokens_required in the metadata; the binding in
//     [TokenInfo].JKT and the outcome in [Event].DPoP. Introspected tokens
//     with cnf.jkt (§6.2) are handled the same way.
//   - Keys through the one-method [KeySource] seam: [StaticKeys] (from
//     [ParseStaticKeys] for a JWK Set document), and [RemoteKeys], a JWK Set
//     from the issuer's validated RFC 8414 metadata, fetched through
//     mcpauth's SSRF-safe fetcher and refreshed by jwx's jwk.Cache
//     (background refresh by cache headers, rate-limited shared refetch on
//     unknown kid, last good keys kept). Both judge a set by the module's one
//     JWK Set rule: any private or symmetric key refuses the set, keys not
//     usable for verifying signatures are skipped.
//   - RFC 7662 introspection of opaque tokens, client-authenticated, with
//     positive and negative caching, failing closed (RS-11).
//   - A scope [Policy] per JSON-RPC method, tool, resource and prompt with
//     implied scopes, decided from the parsed, size-bounded body after the
//     Mcp-Method/Mcp-Name headers are checked against it (RS-12…RS-15,
//     TR-05).
//   - No token passthrough: the wrapped handler's copy of the request has
//     no Authorization, the identity is in the context ([TokenInfoFromContext]),
//     and [Verifier.GuardTransport] refuses outbound requests carrying an
//     inbound token (RS-19).
//   - Per-request authentication (RS-20), the Origin allowlist checked
//     before anything else (TR-01, TR-11), CORS for browser clients
//     (WWW-Authenticate and Mcp-Session-Id exposed, the MCP request
//     headers allowed; RS-26), an audit hook ([Event]) and a bounded
//     verified-token cache, which also keeps what a handler derives from
//     the token ([Derived]), so it is computed once per token.
//   - Sessions bound to their user (MCP Security Best Practices, "Session
//     Hijacking"), for any stateful handler: the Mcp-Session-Id a client
//     sees carries an HMAC over the resource, the token's issuer and
//     subject (or client_id, or the token itself when it has neither)
//     and the handler's ID ([Config.SessionKey]); another user's
//     token with it gets 404 before the handler runs. No table is kept, so
//     replicas sharing the key share sessions.
//   - The official Go SDK's auth.TokenInfo in the request context, as its
//     auth.RequireBearerToken sets it (UserID issuer#subject, scopes,
//     expiry, claims), so the SDK's own session-owner check and
//     req.Extra.TokenInfo work; [TokenInfoFromSDK] reads mcpauth's identity
//     from it.
//   - Handlers never share state with the cache: each request gets its own
//     copy of the identity, and a copy of the *http.Request (the one
//     given to the middleware is left unchanged).
//
// Errors come in a few classes that fix the response and that callers
// branch on with errors.Is: ErrNoToken, ErrInvalidToken, ErrInvalidRequest,
// ErrInsufficientScope (a *ScopeError), ErrInvalidDPoPProof, ErrUseDPoPNonce,
// ErrUnavailable, ErrBadMessage, ErrForbiddenOrigin, ErrUnknownSession;
// ErrTokenPassthrough (a *PassthroughError) for the guard transport and
// ErrInvalidConfig for constructors. A refusal is an *Error whose Reason is
// the fixed description, such as "token expired", that the challenge's
// error_description and the audit Event.Reason carry.
//
// An [Exchanger] lets a tool act at another service as the user: its
// Exchange(ctx, audience) sends the access token of the request being
// served (taken from the context the middleware set; the handler never
// sees it) to the authorization server's token endpoint in an RFC 8693
// token exchange, authenticated with the resource server's own client
// credentials, and returns the user's token there (with mcpauth's
// authorization server, the upstream identity provider's token it keeps:
// authserver.Config.Vault). Its ExchangeResource(ctx, resource,
// scopes...) takes the same path with "resource" set to a downstream API's
// URI (and "scope"), for a token the authorization server issues for that
// API alone, acting for the user (authserver.DownstreamAPI); the API
// verifies it with a Verifier whose Resource is its URI, and refuses the
// MCP token, whose audience is not its own. The MCP token goes only to a token
// endpoint at the origin of the token's issuer, never on a redirect; the
// answer is read up to 64 KiB; results may be cached per (token,
// target, scope) in a bounded LRU until shortly before they expire. Refusals
// wrap ErrExchange and the server's *oauthmeta.Error (and
// ErrExchangeUnavailable when the server could not be reached);
// ExchangeStatus maps them to an HTTP status (401 invalid_grant, 403 for
// downstream API scopes the token lacks, 503 unavailable, 502 otherwise)
// and Verifier.DenyExchange writes that answer, with the invalid_token
// challenge on a 401 and the insufficient_scope challenge, for a step-up,
// on a 403.
//
// It deliberately does not: issue tokens, implement mutual-TLS binding
// (such tokens are refused), check DPoP proofs outside the middleware
// ([Verifier.Verify] refuses bound tokens, having no request to check a
// proof against), send a new DPoP nonce with successful responses (a
// client learns a rotated nonce from one use_dpop_nonce retry), keep or
// expire MCP sessions (the wrapped handler does), or decide what a tool may return to whom beyond scopes
// ([Verifier.Grants] helps handlers do that). Token values never appear
// in errors, logs, audit events or response bodies.
//
// Requirement IDs (RS-nn, TR-nn) refer to docs/requirements.md.
package resource
