// Package dpop implements OAuth 2.0 Demonstrating Proof of Possession (DPoP,
// RFC 9449) for every side of mcpauth: a client builds proofs with a
// [Prover], a resource server or an authorization server checks them with a
// [Verifier]. Packages client, resource and authserver use it for their
// DPoP support; use it directly to add DPoP to another HTTP client or
// server. All JWS work (signing, parsing, signature verification, JWK
// thumbprints) is done by go-jose v4; the proof claims are decoded with
// the module's one JSON policy (names case-sensitive, duplicates refused)
// and the one NumericDate range of internal/jwtverify.
//
// It implements:
//
//   - §4.2 proof syntax, client side: [Prover] signs a fresh proof per
//     request with typ dpop+jwt, the public key in "jwk", a 128-bit random
//     "jti", "htm", "htu" (query and fragment removed, RFC 3986 normalization),
//     "iat", "ath" (the token's SHA-256) with an access token and "nonce" when
//     the server supplied one. ES256 by default; ES384/ES512, RS256/PS256
//     (and 384/512) and EdDSA with a configured key or any crypto.Signer.
//   - §4.3 proof checking, server side: [Verifier.Verify] checks the compact
//     JWS shape and size, typ, the algorithm allowlist (asymmetric only) and
//     its fit with the key type, a public-only "jwk", the signature with that
//     key, htm, htu after RFC 3986 normalization, the iat window, "ath"
//     (present exactly when a token is presented, and equal to its hash),
//     nonces, and jti replay (keyed by key thumbprint and jti, in a bounded
//     in-memory store unless VerifierConfig.Replay names a shared
//     replay.Store). [ProofFromHeader] enforces "at most one DPoP header".
//   - §6 / RFC 7638 key binding: [JKT], [Prover.JKT], [Proof.JKT] and
//     [Proof.CheckBinding] for comparing the proof key with "cnf.jkt".
//   - §7.1 the DPoP authentication scheme and its WWW-Authenticate challenge
//     ([Challenge], with "algs", "error" and "error_description", formatted
//     by oauthmeta.Challenge).
//   - §8 and §9 server-provided nonces: the [NonceSource] seam and
//     [HMACNonces], a stateless rotating implementation.
//   - §12.2 error codes: every error maps to invalid_dpop_proof,
//     use_dpop_nonce, or (for a token bound to another key) invalid_token
//     through [OAuthError].
//
// A client that reuses its key sends the same protected header with every
// proof. The Verifier validates each header it has not seen (typ, alg, the
// embedded key and its thumbprint) and keeps the result in a small bounded
// cache, so a known header is not checked again. Every signature, known
// header or not, is verified by go-jose (DetachedVerify with the embedded
// key): the package has a single signature verification path. A validation
// costs about one signature verification plus 17% (bench_test.go;
// BENCHMARKS.md), most of it go-jose re-decoding the protected header and
// converting the signature on each call.
//
// Typical server use:
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
// Typical client use: one [Prover] per key, and per request
//
//	proof, err := prover.Proof(dpop.Request{Method: http.MethodPost, URL: endpoint, AccessToken: token, Nonce: nonce})
//	req.Header.Set(dpop.HeaderName, proof)
//	req.Header.Set("Authorization", dpop.Scheme+" "+token)
//
// It deliberately does not: parse the Authorization header or access tokens
// (package resource does), issue tokens or "cnf" claims (package authserver
// does), handle "dpop_jkt" in authorization requests, or implement the
// draft MCP DPoP profile's "content_digest" claim. The server URL to compare
// "htu" with is the caller's to supply from configuration.
package dpop
