// Package oauthtest holds small, shared test doubles for mcpauth's tests:
// signing keys (ES256, RS256, EdDSA), RFC 9068 JWT access tokens minted
// with go-jose (and deliberately broken ones: alg "none", HMAC with a public
// key, odd headers and payloads), a fixed clock, a JWK Set server that also
// publishes RFC 8414 authorization server metadata, dialers whose
// connections leave from other loopback addresses (127.0.0.x), and a fake
// DNS resolver with a dial function that fails the test, for SSRF tests
// that must not send a packet anywhere, and a fake of GitHub's OAuth app
// endpoints (authorize, access_token, /user, /user/emails) for the plain
// OAuth 2.0 upstream login. [AS] is a small, strict, auto-approving OAuth
// 2.1 authorization server (metadata, registration, authorization and
// token endpoints, token exchange) with a switch for each misbehaviour a
// peer must survive; [Resource] is a protected MCP server that accepts its
// tokens.
//
// Servers listen on 127.0.0.1 only (httptest). Everything fails the test
// through testing.TB instead of returning errors, so call sites stay short.
//
// Its fakes are for tests; package authserver is the real authorization
// server. It holds no global state; every value is created per test.
package oauthtest
