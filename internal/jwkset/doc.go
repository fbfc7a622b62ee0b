// Package jwkset is the module's one parser of JSON Web Key Sets (RFC 7517
// §5) received from other parties: an authorization server's jwks_uri
// document (package resource, directly or through internal/remotekeys), a
// client's "jwks" metadata or fetched "jwks_uri" and a Client ID Metadata
// Document's "jwks" (package authserver), and a trusted issuer's keys.
// Every caller applies the same rule, so a set is judged identically
// whether it arrives inline or is fetched.
//
// [Parse] implements that rule:
//
//   - A set of at most [MaxSize] bytes and [MaxKeys] members, decoded
//     strictly (one JSON object, case-sensitive names, duplicate names
//     refused at every level) and then key by key with jwx
//     (github.com/lestrrat-go/jwx/v2/jwk), returning public verification
//     keys as standard library types (internal/jwa's Key).
//
//   - Refusal of the whole set when any member carries private or symmetric
//     key material ("d", "p", "q", "dp", "dq", "qi", "oth", "k", or "kty"
//     "oct"; jwa.CheckPublic): such a set is a leaked secret or a mistake,
//     and using its public half would hide either. A set with no usable key
//     left is refused too.
//
//   - RFC 7517 §5's "ignore what you do not understand" for the rest: a
//     member is skipped when its "kty" or "crv" is unsupported (only EC
//     P-256/P-384/P-521, RSA of 2048 to [MaxRSABits] bits, and OKP Ed25519
//     are kept), its "use" is not "sig", its "key_ops" lacks "verify", its
//     "alg" is not an asymmetric JWS algorithm or does not fit the key
//     (RFC 8725 §3.1), its EC point is not on the curve, or its members are
//     malformed.
//
//   - Several keys under one "kid" are all kept, in document order; the
//     verifiers choose among them by "kid" and "alg" (jwa.Candidates).
//
// It does not fetch sets (internal/remotekeys does, and parses them here),
// hold the algorithm and key-type rules (internal/jwa), sign or verify
// signatures (go-jose does), validate "x5c" certificate chains or "x5u"
// URLs (never fetched; a key is trusted because of where its set came
// from), or parse single JWKs embedded in a JWS header (package dpop does,
// under the same private-material rule).
package jwkset
