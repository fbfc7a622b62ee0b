package pgstore

import "context"

// Ping reports whether the database answers, for a readiness check; it
// waits at most the store's query timeout.
func (p *Store) Ping(ctx context.Context) error {
	ctx, cancel := p.ctx(ctx)
	defer cancel()
	return pgErr(p.pool.Ping(ctx))
}
