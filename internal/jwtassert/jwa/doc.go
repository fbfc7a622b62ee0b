// Package jwa is the one home of the JWS algorithm rules (RFC 7518 §3,
// RFC 8037 §3.1) shared by package dpop and package jwtassert: which
// algorithms exist for asymmetric signatures, which key type each one needs,
// and which algorithm a key signs with by default.
//
// Only asymmetric algorithms are known here. "none" and the HMAC family are
// deliberately absent, so no allowlist built from this package can contain
// them (RFC 8725 §3.1, RFC 9449 §4.2). RSA keys must have at least 2048 bits
// (RFC 7518 §3.3). Signing and verification themselves are go-jose's job.
package jwa
