package remotekeys

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/keyset"
)

// Ready reports whether the set holds keys fetched less than StaleAfter
// ago, for a readiness probe. Fresh keys are answered from memory; keys
// never fetched or stale cause one fetch, shared with concurrent callers
// and at most one per RefetchInterval, bounded by ctx and the fetch
// timeout. An error says why (never fetched, or stale since when, with the
// last fetch's failure); it matches keyset.ErrUnavailable and is for logs:
// it may name the URL. Stale keys stay in use by Keys all the same.
func (k *Set) Ready(ctx context.Context) error {
	k.mu.Lock()
	at, closed := k.loadedAt, k.closed
	k.mu.Unlock()
	if closed {
		return ErrClosed
	}
	now := clock.Func(k.cfg.Now).Now()
	if !at.IsZero() && now.Sub(at) < k.cfg.StaleAfter {
		return nil
	}
	_, err := k.refetch(ctx)
	k.mu.Lock()
	at, last := k.loadedAt, k.lastErr
	k.mu.Unlock()
	if err == nil || (!at.IsZero() && now.Sub(at) < k.cfg.StaleAfter) {
		return nil
	}
	if errors.Is(err, errRateLimited) && last != nil {
		err = last
	}
	if at.IsZero() {
		return fmt.Errorf("%w: JWK Set never fetched: %w", keyset.ErrUnavailable, err)
	}
	return fmt.Errorf("%w: JWK Set stale, last fetched %s ago: %w", keyset.ErrUnavailable, now.Sub(at).Round(time.Second), err)
}
