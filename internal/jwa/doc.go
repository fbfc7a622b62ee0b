// Package jwa holds the module's JSON Web Algorithms rules (RFC 7518 §3,
// RFC 8037 §3.1, RFC 8725 §3.1) and the key model they apply to, on the
// standard library only, so that every signer and verifier, and the
// Client ID Metadata Document rule, can use them without linking a JOSE
// library, a JWK Set parser or a key cache:
//
//   - which asymmetric JWS algorithms exist ([Supported], [Allowlist]; "none"
//     and the HMAC family deliberately absent, RFC 8725 §3.1, RFC 9449
//     §4.2), and the default list of each kind of JWS ([Defaults], [Kind]);
//   - which key each algorithm needs ([CheckKey], [Fits]; RSA of at
//     least [MinRSABits]), which algorithm a key signs with by default
//     ([ForKey]) and which key to generate for one
//     ([GenerateKey]);
//   - which keys a verifier tries for a JWS's "kid" and "alg"
//     ([Candidates], at most [MaxKeyTries]);
//   - which JWK members are private or symmetric key material
//     ([SecretMember], [CheckPublic]), the rule by which a JWK Set and a
//     DPoP proof's "jwk" are refused.
//
// It does not parse JWK Sets (package internal/jwkset does, into [Key]s),
// fetch them (internal/remotekeys), or sign and verify (go-jose does,
// given the allowlists in its type by [JOSE]).
package jwa
