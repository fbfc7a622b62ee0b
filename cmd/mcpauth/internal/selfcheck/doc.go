// Package selfcheck tests, from the outside, how an MCP server guards its
// Streamable HTTP endpoint with OAuth: the engine behind `mcpauth check URL`.
// It sends the requests an MCP client and an attacker would send and grades
// each answer against one requirement of the MCP 2026-07-28 authorization
// and transport specifications, named by its ID in
// docs/requirements.md (RS-xx, TR-xx, CL-xx, AS-xx).
//
// What it checks:
//   - RFC 9728 protected resource metadata at the path-inserted well-known
//     URL, its "resource" byte-identical to the URL, at least one
//     authorization server, and a root document that does not claim the
//     path resource (RS-01, RS-02, RS-03, RS-23);
//   - the RFC 6750 §3 / RFC 9728 §5.1 challenge of a request without a
//     token (401, resource_metadata, no error, scope=), with a garbage token
//     (401 invalid_token), with a malformed Authorization header (400
//     invalid_request), and with a token in the query string (never
//     accepted) (RS-04, RS-05, RS-06, RS-07, RS-16, RS-17, RS-25);
//   - Origin validation before authentication and CORS for browser clients
//     (TR-01, TR-11, RS-26);
//   - with a valid token: an accepted call, a following call without the
//     token refused, GET answered 405, and, given a tool the token lacks
//     scope for, the 403 insufficient_scope step-up challenge (RS-12,
//     RS-20, TR-03);
//   - RFC 8414 metadata of every listed authorization server, probed in the
//     MCP order, with an identical issuer, S256 PKCE, RFC 9207 "iss" and
//     Client ID Metadata Document support reported (CL-06, CL-07, AS-02,
//     AS-03, AS-06, AS-15);
//   - DPoP (RFC 9449): whether it is supported or required, the metadata's
//     dpop_signing_alg_values_supported and dpop_bound_access_tokens_required
//     against the 401's DPoP challenge and its "algs", and whether a listed
//     authorization server advertises one of those algorithms (RS-27). A
//     DPoP-only challenge counts as the challenge of RS-04 to RS-06.
//
// [RunIdP], behind `mcpauth check --idp`, probes an identity provider
// instead: its metadata as above and, given a token it issued, which of the
// resource server's token profile presets accepts it.
//
// Grading follows the strength of the requirement as clients meet it: a
// broken MUST that breaks clients or security is [StatusFail]; a missed
// SHOULD, a toolkit recommendation, or a deviation clients survive (no
// resource_metadata while the well-known URL works, 401 instead of 400 for
// a malformed header, a root document naming the endpoint) is
// [StatusWarn]; a check that cannot run (no token given, nothing to
// inspect) or cannot be decided from outside is [StatusSkip].
// [Report.Failed] is what a command's exit code should follow.
//
// The server under test is untrusted. Requests to the URL itself and to
// the well-known URLs derived from it (the same origin the caller chose) use
// a bounded client: a timeout, no redirects, no environment proxy, capped
// bodies. Every URL the server names instead — the resource_metadata
// pointer, the authorization servers — is fetched through
// internal/safehttp, so a challenge pointing at 169.254.169.254 or a
// private address is refused and reported, never dialled. The given token
// is sent only to the URL under test and never appears in a [Report].
//
// What it deliberately does not do: it does not obtain tokens (pass one in),
// run an OAuth flow against the authorization servers, check token
// contents, or test properties invisible from outside, such as whether the
// server passes the token on to upstream APIs (RS-19, reported as skipped).
// It does not replace the official MCP conformance suite, which covers the
// protocol and the client side but has no server-side authorization
// scenarios.
package selfcheck
