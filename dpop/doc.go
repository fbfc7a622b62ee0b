// Package dpop implements OAuth 2.0 Demonstrating Proof of Possession (DPoP,
// RFC 9449) for every side of mcpauth: a client builds proofs with a
// [Prover], a resource server or an authorization server checks them with a
// [Verifier]. Packages client, resource and authserver use it for their
// DPoP support; use it directly to add DPoP to another HTTP client or
// server. JWS work is done by go-jose v4; proof claims are decoded strictly
// (names case-sensitive, duplicates refused).
//
// Beside proofs (§4) it has the key binding of §6 ([JKT], [Proof.CheckBinding]
// against "cnf.jkt"), the DPoP challenge of §7.1 ([Challenge]), server
// nonces of §8 and §9 ([NonceSource], [HMACNonces]) and the error codes of
// §12.2 ([OAuthError]).
//
// A server, per request:
//
//	proof, err := dpop.ProofFromHeader(r.Header)
//	if err == nil {
//		var p *dpop.Proof
//		p, err = verifier.Verify(ctx, proof, dpop.Request{Method: r.Method, URL: resourceURL, AccessToken: token})
//		if err == nil {
//			err = p.CheckBinding(tokenCnfJKT)
//		}
//	}
//	if err != nil {
//		w.Header().Set("WWW-Authenticate", dpop.Challenge(verifier.Algorithms(), err).String())
//	}
//
// A client: one [Prover] per key, and per request
//
//	proof, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: endpoint, AccessToken: token, Nonce: nonce})
//	req.Header.Set(dpop.HeaderName, proof)
//	req.Header.Set("Authorization", dpop.Scheme+" "+token)
//
// It does not parse the Authorization header or access tokens (package
// resource does), issue tokens or "cnf" claims (package authserver does),
// handle "dpop_jkt" in authorization requests, or implement the draft MCP
// DPoP profile's "content_digest" claim. The server URL to compare "htu"
// with is the caller's to supply from configuration.
package dpop
