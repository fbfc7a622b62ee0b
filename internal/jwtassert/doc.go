// Package jwtassert implements the JWT assertions of OAuth 2.0 (RFC 7521,
// RFC 7523) that mcpauth's client and authorization server exchange: client
// authentication with private_key_jwt, and JWT authorization grants for the
// jwt-bearer grant type, which carry both workload identity federation and
// the Enterprise-Managed Authorization extension's ID-JAG. All JWS work is
// done by go-jose v4; keys are standard library types. The JWS compact
// shape, the claims decoding (internal/jsonx) and the one exp/nbf/iat rule
// with its NumericDate range come from internal/jwtverify; the algorithm
// allowlist and the key-type rules from internal/jwa. [Signer] is the
// module's one JWT signer: the signers here and package dpop's Prover
// build on it.
//
// It implements:
//
//   - RFC 7523 §2.2 and §3, client side: [ClientAssertionSigner] builds
//     client assertions with "iss" = "sub" = client_id, a fresh "jti",
//     "iat", and a short "exp" (60 s by default), signed with a
//     crypto.Signer or a PEM key ([ParsePrivateKeyPEM]: PKCS #8, SEC 1,
//     PKCS #1) with ES256/ES384/ES512, RS256, PS256 or EdDSA chosen from the
//     key. "aud" is the authorization server's issuer identifier, as a single
//     string: draft-ietf-oauth-rfc7523bis replaces RFC 7523's token endpoint
//     audience with the issuer, closing an audience-injection attack, and
//     types the JWT as client-authentication+jwt.
//   - RFC 7523 §3, authorization server side for client authentication:
//     [ClientAssertionVerifier] checks alg (asymmetric allowlist), typ,
//     iss = sub = client_id, aud among the accepted audiences, exp (required,
//     at most five minutes ahead), nbf, iat, and jti uniqueness in a bounded
//     replay cache (package replay), then the signature against the client's
//     keys ([keyset.Source], [keyset.Static]; JWK Sets are parsed by
//     internal/jwkset, the module's one JWK Set rule; the selection by
//     "kid" and "alg" is internal/jwa's). Failures map to
//     invalid_client.
//   - RFC 7523 §2.1 and §3 authorization grants: [GrantVerifier] accepts
//     JWTs only from configured [TrustedIssuer]s, each with its own keys, and
//     checks aud, sub, exp, nbf, iat, jti (replay), typ, client_id and scope
//     syntax; it returns the claims ([Grant]). [ProfileJWTBearer] fits
//     workload identity federation (MCP extension "Workload Identity
//     Federation"); [ProfileIDJAG] enforces typ oauth-id-jag+jwt and the
//     required client_id, iat and jti of
//     draft-ietf-oauth-identity-assertion-authz-grant §3 and the client_id
//     binding of §4.4.1. Failures map to invalid_grant.
//   - ID-JAG issuance for an authorization server playing the IdP:
//     [IDJAGSigner] with the claims iss, sub, aud, client_id, jti, iat, exp,
//     resource and scope.
//
// Every verification error wraps one sentinel of errors.go and an
// *oauthmeta.Error ([OAuthError]); key-source and replay-store failures map
// to temporarily_unavailable. Claims are checked before any key is
// resolved, so a JWT that is plainly wrong never causes a JWKS fetch. Keys
// are never taken from the JWT itself: "jwk", "jku", "x5u" and "x5c" headers
// are ignored.
//
// It deliberately does not: fetch JWK sets (callers feed [keyset.Source] from a
// cache built on the SSRF-safe fetcher), perform the RFC 8693 token exchange
// or the token request (package client), decide which workloads or users
// get which scopes (authserver policy), support client_secret_jwt or any
// other symmetric algorithm, or accept encrypted (JWE) assertions.
package jwtassert
