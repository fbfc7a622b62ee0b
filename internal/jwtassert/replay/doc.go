// Package replay remembers single-use JWT identifiers ("jti", RFC 7519
// §4.1.7) for as long as the JWT that carries them would still be accepted,
// so a second presentation is refused. It is the one replay cache of mcpauth:
// package dpop uses it for DPoP proofs (RFC 9449 §11.1, keyed by JWK
// thumbprint and jti) and package jwtassert for client assertions (RFC 7523
// §3 item 7) and JWT authorization grants.
//
// [Store] is the one-method seam a deployment with several instances
// implements on shared storage; [Cache] is the in-memory implementation:
// bounded in entries, every entry expiring at the instant the caller names,
// evicted lazily on use (no background goroutine, nothing to close), and safe
// for concurrent use.
//
// Keys are hashed with SHA-256 before they are stored, so an entry costs the
// same whatever the length of the identifier, and the map holds no pointers
// for the garbage collector to scan.
//
// It deliberately does not: decide how long an identifier must be kept (the
// verifier knows its acceptance window), evict live entries to make room (a
// full cache refuses new identifiers with [ErrFull] rather than forget one
// that could still be replayed), or share state between processes.
package replay
