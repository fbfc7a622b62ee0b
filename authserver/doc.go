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
//		InsecureAllowHTTPLoopback: true, // plain http on loopback only
//		Consent:           authserver.ConsentAuto,
//		Clients:           []authserver.Client{{ID: "app", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
//	})
//	srv.Config.Handler = as
//	srv.Start()
//	defer srv.Close(); defer as.Close()
//
// or in one call, authservertest.NewServer(t, cfg) from package
// [github.com/mcpauth/mcpauth/authserver/authservertest], which does
// exactly that and can also make the server misbehave on purpose (a wrong
// iss, no PKCE methods in the metadata) to test a client's defences.
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
//     validated: each must be in [Config.Scopes] ("scope not supported")
//     and within a pre-registered client's [Client.AllowedScopes] ("scope
//     not allowed for this client"); a request naming none gets the
//     client's [Client.DefaultScopes], else [Config.DefaultScopes].
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
//     the SSRF-guarded fetcher, both judged by the one JWK Set rule that
//     refuses a set holding a private or symmetric key; a replayed
//     assertion jti is refused).
//   - DPoP (RFC 9449, [DPoPConfig], off unless configured): a token
//     request with a valid proof gets a token with token_type DPoP and
//     "cnf.jkt"; a public client's
//     grant and refresh tokens are bound to the key; optional server nonces
//     (use_dpop_nonce with DPoP-Nonce); dpop_signing_alg_values_supported in
//     metadata.
//   - RFC 9068 JWT access tokens signed with go-jose (ES256 by default,
//     RS256 and EdDSA), typ at+jwt, aud = the requested resource; a JWK Set
//     endpoint; key rotation with pre-publication.
//   - Clients: pre-registered, RFC 7591 Dynamic Client Registration, and
//     Client ID Metadata Documents through package clientmeta. The scope a
//     client registers itself (DCR "scope", or the document's) is its
//     default, not a ceiling: scopes outside Config.Scopes are dropped (RFC
//     7591 §3.2.1; the registration response carries the effective value)
//     and the client may later ask for any supported scope, as MCP step-up
//     after 403 insufficient_scope requires. Only pre-registered clients
//     may have a ceiling, [Client.AllowedScopes].
//   - RFC 7662 introspection and RFC 7009 revocation.
//   - Login at an upstream OpenID Connect provider ([Config.Upstream]):
//     discovery, code flow with PKCE S256, state and nonce, ID token
//     verification (signature by go-jose with keys from the provider's
//     JWK Set; iss, aud, azp, exp, nonce by the module's one claims and
//     time rule), allow-lists ([AllowList]), our consent
//     page before the redirect upstream and a state bound to the browser
//     (no confused deputy), grants for [UpstreamSubject] of (issuer, sub);
//     the callback is [Server.UpstreamCallbackURL].
//   - An upstream token vault ([Config.TokenVault]): the provider's access
//     and refresh tokens of each login stay on the server, AES-256-GCM
//     sealed under [TokenVaultConfig.Keys] (the first seals, all open) and
//     bound to the record's ID, in an [UpstreamTokenStore]; they belong to
//     the grant the login's code produced, expire with it, are deleted
//     when it is revoked (revocation, refresh token reuse, code replay) and
//     are refreshed upstream when expired, one refresh per grant at a time
//     (x/sync/singleflight in a process; across replicas a refresh lease
//     stored with the record, [UpstreamTokens.LeaseOwner] and
//     [UpstreamTokens.LeaseUntil], taken by its versioned write and lasting
//     twice [UpstreamConfig.Timeout]: the others wait for the holder's
//     tokens, bounded, then answer temporarily_unavailable). The
//     RFC 8693 token exchange (subject_token_type access_token) hands the
//     user's upstream access token to the resource server whose identity a
//     pre-registered confidential client is
//     ([TokenVaultConfig.ResourceServers]), for an MCP access token whose
//     "aud" is that resource, when "audience" names the provider.
//   - Tokens for downstream APIs without passthrough
//     ([Config.DownstreamAPIs], [DownstreamAPI]): the same token exchange,
//     with "resource" or "audience" naming a configured API, issues a new
//     RFC 9068 JWT for that API alone ("aud" the API, "sub" the user,
//     "client_id" and RFC 8693 §4.1 "act" the resource server) with the
//     requested scopes that the API accepts and the subject token holds,
//     living the API's TokenTTL (default [DefaultDownstreamTokenTTL]) and
//     never beyond the subject token; the API's resource cannot be asked
//     for at the authorization endpoint. It is a Bearer token, and needs
//     no Upstream.
//   - Login at a plain OAuth 2.0 provider such as GitHub
//     ([UpstreamConfig.OAuth2], [OAuth2Provider]): the same code flow and
//     state, the user read from its user-info endpoint (and the primary
//     verified email from an emails endpoint) with the access token sent to
//     that origin only, bounded and decoded strictly; presets for
//     GitHub, Google and Microsoft Entra ID ([UpstreamPreset]).
//   - A grant policy ([GrantPolicy], [ParseGrantPolicy]) mapping upstream
//     users, groups and email domains to the scopes they may obtain:
//     requested ∩ allowed, access_denied (with iss and state) when nothing
//     or a required scope is refused.
//   - Bounded bodies; rate limits per client address (a separate bucket
//     for the authorization, consent and upstream callback endpoints), per
//     (address, claimed client_id) and, once a confidential client has
//     authenticated, per client ([RateLimit]); behind load balancers the
//     address they forwarded for ([TrustedProxies]);
//     no secret or token in any log or error.
//
// Storage is a set of small interfaces ([ClientStore], [CodeStore],
// [GrantStore], [RefreshTokenStore], [ConsentStore], [KeyStore],
// [RevocationStore], [PendingStore], [UpstreamTokenStore]) grouped in
// [Config.Storage], in memory by default ([MemoryStore]). Package
// boltstore keeps them in one bbolt file; package pgstore in PostgreSQL,
// which several replicas share: codes redeem and refresh tokens rotate
// once across all of them (a store that also implements
// [RefreshTokenUser] does a refresh in one step), a login may visit a
// different replica at each step, signing keys are re-read every
// [Config.KeyReloadInterval], and a database outage answers
// temporarily_unavailable. Replicas also share one replay store
// ([Config.Replay]) for DPoP proofs, client assertions and JWT grants
// (package redisreplay keeps it on Redis).
//
// It deliberately does not: authenticate users itself (every grant is for
// [Config.Subject], or for the user of the upstream provider),
// re-evaluate a grant policy per user at refresh (a refresh drops only
// scopes the policy allows nobody), issue ID tokens or implement OpenID
// Connect (the IdP
// role accepts ID tokens of configured providers), support the implicit or
// password grants, "dpop_jkt" authorization requests, pushed authorization
// requests, or pass tokens of a third-party authorization server on.
//
// Requirement IDs (AS-nn, CIMD-nn) refer to docs/requirements.md.
package authserver
