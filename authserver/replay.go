package authserver

import (
	"context"
	"time"

	"github.com/mcpauth/mcpauth/replay"
)

// replayNamespace gives each use of the shared Config.Replay its own keys:
// DPoP proofs, client assertions and each kind of JWT grant. The store's
// answers pass through unchanged; the verifiers recognise
// replay.ErrReplayed.
type replayNamespace struct {
	store  replay.Store
	prefix string
}

func (n replayNamespace) Use(ctx context.Context, key string, until time.Time) error {
	return n.store.Use(ctx, n.prefix+key, until)
}

// replayStore returns Config.Replay under the namespace name, or nil (each
// verifier then keeps a private in-memory store).
func (s *Server) replayStore(name string) replay.Store {
	if s.cfg.Replay == nil {
		return nil
	}
	return replayNamespace{store: s.cfg.Replay, prefix: name + "\x00"}
}
