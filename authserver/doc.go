// Package authserver is a strict OAuth 2.1 authorization server for the
// Model Context Protocol (specification 2026-07-28, "Authorization"), meant
// for tests, demos and local development: start it in a test with one call,
// or run it with `mcpauth authserver`, and it behaves like a production
// authorization server for everything MCP uses.
//
// In a test, the issuer must be the test server's own URL, so the listener
// comes first:
//
//	srv := httptest.NewUnstartedServer(nil)
//	as, err := authserver.New(authserver.Config{
//		Issuer:            "http://" + srv.Listener.Addr().String(),
//		InsecureAllowHTTP: true, // plain http on loopback only
//		Consent:           authserver.ConsentAuto,
//		Clients:           []authserver.Client{{ID: "app", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
//	})
//	srv.Config.Handler = as
//	srv.Start()
//	defer srv.Close(); defer as.Close()
//
// or in one call, [StartTestServer](cfg), which does exactly that.
//
// What it implements:
//
//   - RFC 8414 metadata at the path-inserted well-known URL of the issuer,
//     and the same document as OpenID Connect discovery (both insertion and
//     appending forms for issuers with a path), advertising S256 PKCE, the
//     RFC 9207 iss parameter and Client ID Metadata Documents.
//   - The authorization endpoint (OAuth 2.1 §4.1): code flow only, S256 PKCE
//     required, exact redirect URI matching with only the RFC 8252 loopback
//     port exemption, an HTML error page and no redirect when the client or
//     redirect URI is not trusted, state echoed and iss on every response,
//     RFC 8707 resource indicators validated and bound to the code, scopes
//     validated.
//   - Consent: automatic, denied, or an HTML page (client name, client_id
//     host, redirect host, localhost-only warning, scopes, resources) bound
//     to the browser by a cookie and a CSRF token, framing forbidden, no
//     script, 303 after the POST. The cookie is "__Host-mcpauth-consent"
//     (Secure) on an https issuer; on a plain-http loopback issuer, where
//     browsers refuse __Host- and Secure, it is "mcpauth-consent", still
//     HttpOnly and SameSite=Strict.
//   - The token endpoint (OAuth 2.1 §3.2): authorization_code (single use,
//     short-lived, bound to client, redirect URI, challenge, resource and
//     scope; a replay revokes what the code produced) and refresh_token
//     (rotation on every use, reuse revokes the family, scope may only
//     narrow, resource honoured), client_credentials for confidential
//     clients, the JWT-bearer grant (RFC 7523) for assertions of
//     [Config.TrustedIssuers] (workload identity tokens; ID-JAGs of
//     Enterprise-Managed Authorization, bound to the presenting client), and
//     with [Config.IdentityProvider] the RFC 8693 token exchange that issues
//     ID-JAGs (typ oauth-id-jag+jwt) as an enterprise IdP; client
//     authentication none, client_secret_basic, client_secret_post and
//     private_key_jwt (RFC 7523 §2.2; keys from the client's jwks or
//     jwks_uri, including a Client ID Metadata Document's, fetched through
//     the SSRF-guarded fetcher; a replayed assertion jti is refused).
//   - DPoP (RFC 9449, [DPoPConfig]): a token request with a valid proof
//     gets a token with token_type DPoP and "cnf.jkt"; a public client's
//     grant and refresh tokens are bound to the key; optional server nonces
//     (use_dpop_nonce with DPoP-Nonce); dpop_signing_alg_values_supported in
//     metadata.
//   - RFC 9068 JWT access tokens signed with go-jose (ES256 by default,
//     RS256 and EdDSA), typ at+jwt, aud = the requested resource; a JWK Set
//     endpoint; key rotation with pre-publication.
//   - Clients: pre-registered, RFC 7591 Dynamic Client Registration, and
//     Client ID Metadata Documents through package clientmeta.
//   - RFC 7662 introspection and RFC 7009 revocation.
//   - Deliberate faults ([Faults]) so client libraries can be tested
//     against mix-up cases.
//   - Bounded bodies, per-IP and per-client rate limits, no secret or token
//     in any log or error.
//
// Storage is a set of small interfaces ([ClientStore], [CodeStore],
// [GrantStore], [RefreshTokenStore], [ConsentStore], [KeyStore],
// [RevocationStore]) with an in-memory implementation and a bbolt one used
// when [Config.DataDir] is set.
//
// It deliberately does not: authenticate users (every grant is for
// [Config.Subject]), issue ID tokens or implement OpenID Connect (the IdP
// role accepts ID tokens of configured providers), support the implicit or
// password grants, "dpop_jkt" authorization requests, pushed authorization
// requests, or proxy a third-party authorization server.
package authserver
