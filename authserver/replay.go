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

// namespaced returns store (Config.Replay) under the namespace name, or
// nil when store is nil (each verifier then keeps a private in-memory
// store).
func namespaced(store replay.Store, name string) replay.Store {
	if store == nil {
		return nil
	}
	return replayNamespace{store: store, prefix: name + "\x00"}
}
