// Package pkce implements Proof Key for Code Exchange (RFC 7636) as MCP
// requires it: the S256 method only (MCP 2026-07-28, "Authorization Code
// Protection"; OAuth 2.1 §4.1.1).
//
// A client calls [GenerateVerifier] once per authorization request, sends
// [Challenge] of it with code_challenge_method=S256, and sends the verifier
// with the token request. An authorization server checks the pair with
// [Verify], which also enforces the verifier syntax of RFC 7636 §4.1.
//
//	v := pkce.GenerateVerifier()
//	authURL := cfg.AuthCodeURL(state, oauth2.SetAuthURLParam("code_challenge", pkce.Challenge(v)),
//		oauth2.SetAuthURLParam("code_challenge_method", pkce.Method))
//
// The "plain" method deliberately does not exist here: it offers no
// protection against an attacker who can read the authorization request, and
// MCP forbids it. The package imports only the standard library.
package pkce
