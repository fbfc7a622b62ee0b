// Package keyset is the contract between a token verifier and the keys it
// verifies signatures with: a [Key] in standard library types, the
// one-method [Source] a verifier asks for keys, and [Static], a fixed
// Source.
//
// Every verifier of the module takes a Source: the resource server's access
// token verifier, and the authorization server's checks of client
// assertions and JWT authorization grants. A Source only finds keys; which
// key may check which signature (by "kid", "alg" and key type) is decided by
// the verifier, so a Source may return more keys than match.
//
// To start, give a verifier a [Static] of the keys you distribute out of
// band, or implement Source over your own key store. Package resource
// parses JWK Set documents (resource.ParseStaticKeys) and fetches them from
// a jwks_uri (resource.RemoteKeys).
package keyset
