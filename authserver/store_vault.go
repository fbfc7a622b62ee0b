package authserver

import (
	"context"
	"slices"
	"time"
)

// UpstreamTokenStore keeps the upstream provider's tokens of each login,
// as [UpstreamTokens] records whose tokens the server sealed before
// handing them over: a store never sees a token in clear.
type UpstreamTokenStore interface {
	UpstreamTokens(ctx context.Context, id string) (*UpstreamTokens, error)
	// SaveUpstreamTokens stores t, every field (the refresh lease too),
	// if the stored record under t.ID has Version t.Version-1 (when
	// t.Version is 1: if there is none). Otherwise it changes nothing and
	// returns [ErrAlreadyUsed], so of two replicas taking the refresh
	// lease, or storing refreshed tokens, only one write wins.
	SaveUpstreamTokens(ctx context.Context, t *UpstreamTokens) error
	// DeleteUpstreamTokens removes the record; a missing one is no error.
	DeleteUpstreamTokens(ctx context.Context, id string) error
}

// UpstreamTokens is one login's upstream tokens, sealed.
type UpstreamTokens struct {
	// ID is random, chosen at the upstream callback.
	ID string `json:"id"`
	// GrantID is our grant the tokens belong to, set when the login's
	// authorization code is redeemed; empty until then.
	GrantID string `json:"grant_id,omitempty"`
	// Sealed is the access token, refresh token, type and expiry,
	// sealed by the [Vault] and bound to ID.
	Sealed []byte `json:"sealed"`
	// Version counts the writes of the record, from 1.
	Version int64 `json:"version"`
	// ExpiresAt is when the record may be dropped: the end of the login
	// step until the code is redeemed, then the grant's expiry.
	ExpiresAt time.Time `json:"expires_at"`
	// LeaseOwner names the upstream refresh that holds the record's
	// refresh lease (random, one per refresh); empty when none does.
	LeaseOwner string `json:"lease_owner,omitempty"`
	// LeaseUntil is when that lease ends, by the server's clock: until
	// then no other replica refreshes the tokens upstream. Zero when no
	// lease is held.
	LeaseUntil time.Time `json:"lease_until,omitzero"`
}

func cloneUpstreamTokens(t *UpstreamTokens) *UpstreamTokens {
	d := *t
	d.Sealed = slices.Clone(t.Sealed)
	return &d
}

// UpstreamTokens implements [UpstreamTokenStore].
func (m *MemoryStore) UpstreamTokens(_ context.Context, id string) (*UpstreamTokens, error) {
	return memGet(m, m.vault, id, cloneUpstreamTokens)
}

// SaveUpstreamTokens implements [UpstreamTokenStore].
func (m *MemoryStore) SaveUpstreamTokens(_ context.Context, t *UpstreamTokens) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var have int64
	if old, ok := m.vault[t.ID]; ok {
		have = old.Version
	}
	if have != t.Version-1 {
		return ErrAlreadyUsed
	}
	m.vault[t.ID] = cloneUpstreamTokens(t)
	return nil
}

// DeleteUpstreamTokens implements [UpstreamTokenStore].
func (m *MemoryStore) DeleteUpstreamTokens(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.vault, id)
	return nil
}
