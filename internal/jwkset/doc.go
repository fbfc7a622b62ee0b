// Package jwkset is mcpauth's home of verification keys: the JWS
// algorithm rules (RFC 7518 §3, RFC 8037 §3.1) and the one parser of JSON
// Web Key Sets (RFC 7517 §5) received from other parties: an authorization server's jwks_uri document
// (package resource), a client's "jwks" metadata or fetched "jwks_uri"
// (package authserver, through internal/jwtassert), and a trusted issuer's
// keys. Every caller applies the same rule, so a set is judged identically
// whether it arrives inline or is fetched.
//
// It implements:
//
//   - The algorithm rules shared by every verifier and signer: which
//     asymmetric algorithms exist ([Supported], [Allowlist]; "none" and
//     the HMAC family deliberately absent, RFC 8725 §3.1, RFC 9449 §4.2),
//     which key type each needs ([CheckKey], [Key.Fits]; RSA of at least
//     [MinRSABits]), which keys a verifier tries for a JWS's "kid" and
//     "alg" ([Candidates], at most [MaxKeyTries]), and which algorithm a key
//     signs with by default ([ForKey], [SigningKey]).
//
//   - [Parse]: a set of at most [MaxSize] bytes and [MaxKeys] members,
//     decoded strictly (one JSON object, case-sensitive names, duplicate
//     names refused at every level) and then key by key with jwx
//     (github.com/lestrrat-go/jwx/v2/jwk), returning public verification
//     keys as standard library types ([Key]).
//
//   - Refusal of the whole set when any member carries private or symmetric
//     key material ("d", "p", "q", "dp", "dq", "qi", "oth", "k", or "kty"
//     "oct"): such a set is a leaked secret or a mistake, and using its
//     public half would hide either. A set with no usable key left is
//     refused too.
//
//   - RFC 7517 §5's "ignore what you do not understand" for the rest: a
//     member is skipped when its "kty" or "crv" is unsupported (only EC
//     P-256/P-384/P-521, RSA of 2048 to 8192 bits, and OKP Ed25519 are
//     kept), its "use" is not "sig", its "key_ops" lacks "verify", its "alg"
//     is not an asymmetric JWS algorithm or does not fit the key (RFC 8725
//     §3.1), its EC point is not on the curve, or its members are malformed.
//
//   - Several keys under one "kid" are all kept, in document order; the
//     verifiers choose among them by "kid" and "alg".
//
//   - [RemoteKeys]: one issuer's JWK Set, its jwks_uri found by RFC 8414
//     discovery when not configured, fetched through internal/safehttp,
//     parsed by [Parse], refreshed in the background by jwx's jwk.Cache
//     (which only schedules: every fetch goes through the same fetcher and
//     rule), refetched on an unknown "kid" at most once per interval with
//     one shared fetch (x/sync/singleflight), the last good keys kept when
//     a fetch fails. Package resource exposes it as resource.RemoteKeys;
//     the authorization server uses it for clients' jwks_uri.
//
// It does not sign or verify signatures (go-jose does), choose keys for a
// token (packages resource and internal/jwtassert do), validate "x5c" certificate chains or "x5u" URLs
// (never fetched; a key is trusted because of where its set came from), or
// parse single JWKs embedded in a JWS header (package dpop does, under the
// same private-material rule).
package jwkset
