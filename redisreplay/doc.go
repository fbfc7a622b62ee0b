// Package redisreplay keeps single-use identifiers on Redis, so that
// replicas behind one load balancer refuse a replayed DPoP proof (RFC 9449
// §11.1), client assertion (RFC 7523 §3) or JWT-bearer grant that another
// replica already accepted.
//
// Each identifier is recorded with one SET … NX PXAT command: of any
// number of concurrent uses, on any replicas, exactly one succeeds, and
// Redis drops the key when the proof or assertion could no longer be
// accepted anyway. Keys are the SHA-256 of the identifier under a prefix,
// so their size does not depend on what a client sends.
//
// It fails closed: when Redis cannot be reached or answers with an error,
// Use returns an error that is not a replay, and the verifiers refuse the
// request (503 temporarily_unavailable at the authorization server; 401
// with no detail, or 503, at a resource server). It does not fall back to
// memory.
//
// [New] returns the [replay.Store] for dpop.VerifierConfig.Replay,
// resource.DPoPConfig.Replay or authserver.Config.Replay; [NewClient]
// opens a client with bounded timeouts from a redis:// URL.
package redisreplay
