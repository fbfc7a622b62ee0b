// Package client is the OAuth 2.1 client of an MCP host (an IDE, an agent,
// a CLI): given the URL of a protected MCP server, it finds the server's
// authorization server from a 401 or 403, registers, authorizes with PKCE,
// checks the response against mix-up attacks, and keeps, refreshes and
// steps up one token per (authorization server, resource, client). It
// implements the client side of the MCP authorization specification
// 2026-07-28 ("Authorization", "Authorization Server Discovery", "Client
// Registration", "Security Considerations"), requirements CL-01 to CL-25
// and CIMD-12 (IDs refer to docs/requirements.md).
//
// Use it through one of two doors:
//
//   - [Client.OAuthHandler] implements the official Go SDK's
//     auth.OAuthHandler, for mcp.StreamableClientTransport;
//   - [Client.Transport] is an http.RoundTripper for any HTTP client.
//
// x/oauth2 code can take [Client.TokenSource], without 401/403 handling.
//
// A minimal CLI host:
//
//	c, err := client.New(client.Config{
//		Authorizer:          &client.Loopback{},   // browser + 127.0.0.1 listener
//		ClientIDMetadataURL: "https://app.example.com/oauth/client.json",
//		Store:               fileStore,             // tokenstore.NewFile(...)
//	})
//	h, err := c.OAuthHandler("https://mcp.example.com/mcp")
//	session, err := mcp.NewClient(impl, nil).Connect(ctx,
//		&mcp.StreamableClientTransport{Endpoint: "https://mcp.example.com/mcp", OAuthHandler: h}, nil)
//
// # What happens on a 401
//
//  1. The WWW-Authenticate header is parsed (RFC 9110 §11.6.1, RFC 6750 §3,
//     RFC 9728 §5.1; CL-01).
//  2. Protected resource metadata is fetched from the challenge's
//     resource_metadata URL, else the path-inserted well-known URL, else the
//     root one, stopping at the first document served (CL-02). Its
//     "resource" must be identical to the URL called (or, for the root
//     document, its origin) or authorization stops (RFC 9728 §3.3; CL-03).
//  3. Each listed authorization server, in the order [Config.SelectAuthServer]
//     gives, has its metadata fetched in the MCP order (RFC 8414 path
//     insertion, OpenID Connect path insertion, OpenID Connect appended;
//     CL-06); the first whose issuer is identical to the one asked for
//     (CL-07), whose endpoints are https (CL-22) and which advertises S256
//     (CL-08) is used (CL-05). Results are cached in the [TokenStore] for
//     the documents' max-age (default [DefaultMetadataTTL]), so a second
//     connection costs no discovery request.
//  4. The client registers in MCP's order (CL-16): credentials
//     pre-registered for exactly this issuer; a registration stored from an
//     earlier run; the Client ID Metadata Document URL when the server
//     advertises support; RFC 7591 dynamic registration with
//     application_type (CL-17); otherwise [errNoRegistration]. Credentials
//     are bound to their issuer and never shown to another (CL-18); a
//     resource that moves away from the issuer of pre-registered
//     credentials is [errIssuerChanged], not a silent new registration. A
//     stored dynamic registration the token endpoint refuses with
//     invalid_client (the server deleted it) is dropped, with its token,
//     and replaced once per operation by a new registration and a fresh
//     authorization; the refused code or refresh token is not sent again.
//  5. The [Authorizer] gets the user through the authorization request: PKCE
//     S256 (CL-09), a single-use state whose record holds the verifier, the
//     expected issuer, the token endpoint, the resource, the redirect URI
//     and the scopes before the redirect happens (CL-10, CL-11); "resource"
//     on every request (CL-04); scopes from the challenge, else the
//     resource's scopes_supported, else none (CL-14); offline_access only if
//     the authorization server lists it (CL-20).
//  6. The response is checked: state, then the RFC 9207 iss table with
//     simple string comparison, before the code or any error text is used
//     (CL-12); the code is redeemed only at the recorded token endpoint
//     (CL-13).
//
// Every token request goes through golang.org/x/oauth2 (Config.Exchange
// for the code; clientcredentials.Config, which can carry any grant and
// "resource", for refresh and the machine grants), over the SSRF-guarded
// client, with an explicit AuthStyle: x/oauth2 never retries with the
// secret moved. With client_secret_basic, client_id is also in the body
// (RFC 6749 §3.2.1; some servers require it). Responses must be one strict
// JSON object of at most 1 MiB with token_type Bearer, or DPoP when the
// request carried a proof; a refusal shows the server's error code and
// description, without any credential it echoes.
//
// A refused token is refreshed first (with "resource", unless
// [AuthServerOptions.OmitResourceOnRefresh]) unless the challenge needs
// scopes the grant lacks; a 403 insufficient_scope re-authorizes with the
// union of the previously requested and the challenged scopes (CL-15),
// unless the refused token already carries every challenged scope
// ([errInsufficientScope]: asking again would change nothing). One
// operation starts at most [MaxAuthorizationAttempts] authorizations.
//
// Every document, registration and token request goes through one
// SSRF-guarded fetcher (internal/safehttp): https only, addresses checked
// at dial time after resolution, no proxies, size caps and timeouts
// (CL-23). Tokens go only to the MCP server they were issued for, in the
// Authorization header (CL-19), and never follow a redirect to another
// origin (scheme, host, port): [Transport] and [OAuthHandler.HTTPClient]
// drop Authorization, DPoP and Cookie on such a hop, and token and
// registration requests follow no redirect at all. No error or log record contains a token,
// secret, code or verifier.
//
// # The root-metadata prefix rule
//
// RFC 9728 §3.3 demands that the metadata's "resource" equal the resource
// the client asked about. Some servers publish one root document
// ("resource": "https://h") for an MCP endpoint at "https://h/mcp" and
// point to it from their challenges; several SDKs accept any same-origin
// path prefix. That acceptance lets one path of a host speak for another,
// so it is off by default; [Config.InsecureAllowResourcePrefix] turns it
// on, and the token is then requested for the prefix the metadata names.
// A root document reached by probing (not through the challenge) is
// accepted without it, as RFC 9728 allows.
//
// # Extensions
//
// [Config.DPoP] makes the client request sender-constrained tokens (RFC
// 9449): a proof on every token request, token_type DPoP accepted only when a
// proof was sent, the token presented with the DPoP scheme and a fresh proof
// ("ath") on every resource request, and one resend with the server's nonce
// after use_dpop_nonce, at the authorization server (§8) and at the resource
// server (§9); a DPoP-Nonce on any response, the first 401 included, goes
// into the next proof. Before an authorization starts, the proof algorithm
// is chosen from those both the authorization server (§5.1) and the resource
// (§7.1 "algs", RFC 9728 metadata) accept; a generated key is kept with its
// token in the [TokenStore]. A resource that accepts only DPoP-bound tokens
// gets them or [errDPoPUnsupported] before any authorization or token
// request, never a Bearer token. Stored DPoP tokens carry the key's
// thumbprint and are used only with that key. With the SDK, set
// StreamableClientTransport.HTTPClient to [OAuthHandler.HTTPClient].
//
// [Config.Grant] replaces the interactive flow with a machine grant, after
// the same discovery: [ClientCredentials] (client_secret_basic or
// private_key_jwt, RFC 7523 §2.2), [EnterpriseAuthorization] (an ID-JAG from
// the enterprise IdP by RFC 8693 token exchange, then the JWT-bearer grant)
// and [WorkloadIdentity] (a platform JWT with the JWT-bearer grant, checked
// locally for its audience and expiry before it is sent). A failed grant is
// returned as is: no retry, no fallback to another grant.
//
// # What it does not do
//
// A Client ID Metadata Document client is public (no private_key_jwt for
// URL client_ids). No "dpop_jkt" in authorization requests (RFC 9449 §10).
// The client does not host its Client ID Metadata Document (see package
// clientmeta). It does not speak MCP itself: the SDK or the caller's HTTP
// code does.
package client
