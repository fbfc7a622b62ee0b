package authserver

import (
	"context"
	"errors"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtassert/replay"
)

// ReplayStore records single-use identifiers until they expire: the "jti"
// of DPoP proofs at the token endpoint, of private_key_jwt client
// assertions and of JWT-bearer grants (workload tokens and ID-JAGs).
// Replicas behind one issuer must share one, or a proof or assertion
// accepted at one replica could be replayed at another.
//
// Use records key until the instant until and returns nil, or returns an
// error wrapping [ErrReplayed] if key was recorded before and has not
// expired. Any other error refuses the request with
// temporarily_unavailable (fail closed). Implementations must be safe for
// concurrent use; keys are at most a few hundred bytes.
type ReplayStore interface {
	Use(ctx context.Context, key string, until time.Time) error
}

// ErrReplayed is what a [ReplayStore] returns (or wraps) for a key it has
// seen before.
var ErrReplayed = errors.New("authserver: identifier already used")

// replayNamespace gives each use of a shared ReplayStore its own keys and
// translates its replay answer into the one the verifiers recognise.
type replayNamespace struct {
	store  ReplayStore
	prefix string
}

func (n replayNamespace) Use(ctx context.Context, key string, until time.Time) error {
	err := n.store.Use(ctx, n.prefix+key, until)
	if errors.Is(err, ErrReplayed) {
		return replay.ErrReplayed
	}
	return err
}

// replayStore returns Config.Replay under the namespace name, or nil (each
// verifier then keeps a private in-memory cache).
func (s *Server) replayStore(name string) replay.Store {
	if s.cfg.Replay == nil {
		return nil
	}
	return replayNamespace{store: s.cfg.Replay, prefix: name + "\x00"}
}
