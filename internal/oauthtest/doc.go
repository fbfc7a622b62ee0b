// Package oauthtest holds small, shared test doubles for mcpauth's tests:
// signing keys (ES256, RS256, EdDSA), RFC 9068 JWT access tokens minted
// with go-jose (and deliberately broken ones: alg "none", HMAC with a public
// key, odd headers and payloads), a fixed clock, a JWK Set server that also
// publishes RFC 8414 authorization server metadata, dialers whose
// connections leave from other loopback addresses (127.0.0.x), and a fake
// DNS resolver with a dial function that fails the test, for SSRF tests
// that must not send a packet anywhere, and a fake of GitHub's OAuth app
// endpoints (authorize, access_token, /user, /user/emails) for the plain
// OAuth 2.0 upstream login.
//
// Servers listen on 127.0.0.1 only (httptest). Everything fails the test
// through testing.TB instead of returning errors, so call sites stay short.
//
// It is not an authorization server: package authserver is. It holds no
// global state; every value is created per test.
package oauthtest
