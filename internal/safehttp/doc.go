// Package safehttp is the one HTTP fetcher mcpauth uses for every document it
// did not choose: protected resource metadata, authorization server metadata,
// JWK Sets, Client ID Metadata Documents and logos. Such URLs come from other
// parties (a 401 challenge, a metadata document, a client_id), so each fetch
// is treated as a possible server-side request forgery (MCP Security Best
// Practices, "SSRF"; RFC 9728 §7.7; CIMD §6; requirements CL-23 and CIMD-05).
//
// The defences:
//
//   - The scheme is https. Plain http is allowed only to loopback targets and
//     only with [Options.InsecureAllowHTTPLoopback].
//   - The address check happens at dial time, after name resolution, on every
//     address the name resolves to; the connection then goes to the checked
//     address itself, so a DNS answer that changes between check and connect
//     (DNS rebinding) cannot slip through. Loopback, RFC 1918 private,
//     link-local (169.254.0.0/16 and so the cloud metadata address), carrier
//     NAT, unique-local (fc00::/7), multicast, unspecified, documentation and
//     other RFC 6890 special-use ranges are refused, as are IPv4-mapped,
//     NAT64 and 6to4 forms that embed such an address.
//   - Environment proxies are never used (a proxy would make the address
//     check meaningless).
//   - Redirects are refused by default; when allowed, each hop is checked
//     again and their number is bounded.
//   - The body is capped, the whole exchange has a timeout, and the
//     Content-Type is checked.
//
// Every refusal is a typed error ([*BlockedAddressError], [*StatusError],
// ...) that also matches a sentinel with errors.Is. The resolver and the dial
// function are injectable, which is how tests prove that a refused address is
// never dialled, without sending a packet off the machine.
//
// [OnRedirect] is the module's one rule for credentials on redirects,
// applied first by every client transport that carries a token: a request that
// follows a redirect to another origin (scheme, host and port, RFC 6454)
// leaves without Authorization, DPoP and Cookie headers, and no redirected
// request carries a DPoP proof made for the previous URL.
//
// safehttp does not cache (callers decide what a response's cache headers
// mean), authenticate, or follow any redirect it was not allowed to.
//
// Requirement IDs (CL-nn, CIMD-nn) refer to docs/requirements.md.
package safehttp
