// Package replay is the one seam through which mcpauth refuses a single-use
// JWT presented twice: a DPoP proof (RFC 9449 §11.1), a client assertion
// (RFC 7523 §3) or a JWT authorization grant. A verifier records each
// accepted "jti" in a [Store] for as long as the JWT could still be
// accepted, and refuses a JWT whose key the store has seen.
//
// Every verifier takes a Store (dpop.VerifierConfig.Replay,
// resource.DPoPConfig.Replay, authserver.Config.Replay) and, given none,
// keeps a private [Memory], which is all one process needs. Instances
// behind one load balancer must share a store on shared storage: package
// redisreplay keeps one on Redis, and any type with the Use method of the
// [Store] contract fits:
//
//	func (s *myStore) Use(ctx context.Context, key string, until time.Time) error {
//		recorded, err := s.setIfAbsent(ctx, key, until)
//		switch {
//		case err != nil:
//			return err // refused as unavailable, never accepted
//		case !recorded:
//			return fmt.Errorf("mystore: %w", replay.ErrReplayed)
//		}
//		return nil
//	}
//
// A store fails closed: any error that does not wrap [ErrReplayed] (the
// storage down, the store full) refuses the JWT as a temporary failure,
// and no verifier falls back to memory.
package replay
