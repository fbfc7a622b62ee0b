// Package jwtverify holds the rules every JWT mcpauth verifies goes
// through, whoever issued it: RFC 9068 access tokens (resource), RFC 7523
// client assertions and authorization grants and ID-JAGs
// (internal/jwtassert), DPoP proofs (dpop) and the authorization server's own
// tokens (authserver).
//
// It implements:
//   - the one path from a compact JWS to a verified signature for every JWT
//     checked with a key the verifier looks up: [ParseCompact] (go-jose,
//     the allowlist, one signature, no unencoded payload) and
//     [VerifySignature] (keys from a keyset.Source by "kid", the candidates
//     of internal/jwa, the signature check), with shared sentinels;
//   - the JWS compact shape (RFC 7515 §7.1): [Split], [LooksLikeJWS];
//   - the "typ" comparison of RFC 7515 §4.1.9 and RFC 8725 §3.11: [TypeIs];
//   - the registered claims (RFC 7519 §4.1), decoded with internal/jsonx
//     (names case-sensitive, duplicates refused): [Claims], [DecodeClaims];
//   - one NumericDate range ([MaxNumericDate], year 9999) and one time rule
//     for exp, nbf and iat with a leeway and an optional lifetime ceiling:
//     [Times].
//
// Signatures are checked by go-jose; which algorithm fits which key is
// internal/jwa's rule. jwtverify does no I/O of its own (a key source may),
// keeps no state and does not know issuers, audiences or replay stores:
// each verifier applies those with its own errors. DPoP proofs carry their
// key and are checked by package dpop.
package jwtverify
