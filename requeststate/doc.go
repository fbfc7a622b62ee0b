// Package requeststate protects the state an MCP server hands to a client
// and gets back later: the requestState of a multi round-trip request (an
// InputRequiredResult, MCP 2026-07-28), and the handles of state kept on
// the server. It is named for the protocol field, the thing it protects;
// any MCP server may use it on its own.
//
// The client echoes requestState on its retry, so it is attacker-controlled
// input. A [Sealer] encrypts and authenticates it (AES-256-GCM) and binds it
// to a [Binding]: the verified access token's issuer, subject and client,
// the method, the tool (prompt, resource) name and a digest of the
// arguments. [Sealer.Open] refuses a state that was tampered with, has
// expired, is presented by another user or client or on another request,
// or (with a replay store) was used before, each with its own error:
//
//	s, err := requeststate.New(requeststate.Config{Key: key, TTL: 10 * time.Minute, Replay: store})
//	state, err := s.Seal(binding, []byte("github"))   // into InputRequiredResult.requestState
//	...
//	data, err := s.Open(ctx, retried.RequestState, binding) // on the retry
//	if errors.Is(err, requeststate.ErrRefused) { /* answer invalid params */ }
//
// [Handles] keeps server-side state under unguessable handles, keyed by the
// verified subject that created them: another user presenting the handle
// finds nothing (the "State Handle Hijacking" rule of the MCP Security Best
// Practices).
package requeststate
