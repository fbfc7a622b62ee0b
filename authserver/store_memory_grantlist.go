package authserver

import (
	"context"
	"slices"
	"time"
)

// GrantsBySubject implements [GrantLister]. It scans every grant: the
// admin API's listing is rare.
func (m *MemoryStore) GrantsBySubject(_ context.Context, subject string, now time.Time, limit int) ([]*Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Grant
	for _, g := range m.grants {
		if g.Subject == subject && g.ExpiresAt.After(now) {
			out = append(out, cloneGrant(g))
		}
	}
	return newestGrants(out, limit), nil
}

// newestGrants sorts gs newest first and keeps at most limit of them.
func newestGrants(gs []*Grant, limit int) []*Grant {
	slices.SortFunc(gs, func(a, b *Grant) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return gs[:min(len(gs), max(limit, 0))]
}

// SortGrantsNewestFirst sorts gs newest first and keeps at most limit of
// them, as [GrantLister] returns them; for store implementations.
func SortGrantsNewestFirst(gs []*Grant, limit int) []*Grant { return newestGrants(gs, limit) }
