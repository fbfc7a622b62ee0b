package authserver

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxMemoryClients bounds the clients a [MemoryStore] holds.
const maxMemoryClients = 10000

// MemoryStore implements every store interface in memory. It is safe for
// concurrent use; records are copied in and out, so callers never share
// them. The zero value is not usable; call [NewMemoryStore].
//
// It holds at most 10,000 clients: dynamic registration is rate-limited
// per address, but registrations never expire, so without a bound a
// patient caller could grow the store forever; past the bound SaveClient
// refuses new clients with temporarily_unavailable.
type MemoryStore struct {
	mu       sync.Mutex
	clients  map[string]*Client
	codes    map[string]*Code
	grants   map[string]*Grant
	refresh  map[string]*RefreshToken
	consents map[[2]string]*Consent
	keys     map[string]*SigningKey
	revoked  map[string]time.Time
	vault    map[string]*UpstreamTokens
	// connect holds connected accounts and connect tickets, with its own
	// lock and bound (store_memory_connect.go).
	connect *memConnect

	// pending has its own lock and bound: at MaxPendingAuthorizations, a
	// new record pushes out the least recently used one.
	pending *lru.Cache[string, *PendingAuthorization]

	// devices are the device codes (store_memory_device.go).
	devices *memoryDevices
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		clients:  make(map[string]*Client),
		codes:    make(map[string]*Code),
		grants:   make(map[string]*Grant),
		refresh:  make(map[string]*RefreshToken),
		consents: make(map[[2]string]*Consent),
		keys:     make(map[string]*SigningKey),
		revoked:  make(map[string]time.Time),
		vault:    make(map[string]*UpstreamTokens),
		connect:  newMemConnect(),
		// No clock: expiry is checked against the time the caller passes.
		pending: lru.New[string, *PendingAuthorization](MaxPendingAuthorizations, nil, nil),
		devices: newMemoryDevices(),
	}
}

// Storage returns a [Storage] with every field set to m.
func (m *MemoryStore) Storage() Storage {
	return Storage{Clients: m, Codes: m, Grants: m, RefreshTokens: m, Consents: m, Keys: m, Revocations: m, Pending: m, UpstreamTokens: m,
		Connect: m, Devices: m}
}

// memGet returns a copy of the record under k in tbl, or [ErrNotFound].
func memGet[K comparable, V any](m *MemoryStore, tbl map[K]*V, k K, clone func(*V) *V) (*V, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := tbl[k]
	if !ok {
		return nil, ErrNotFound
	}
	return clone(v), nil
}

// memPut stores a copy of v under k in tbl.
func memPut[K comparable, V any](m *MemoryStore, tbl map[K]*V, k K, v *V, clone func(*V) *V) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl[k] = clone(v)
	return nil
}

// Client implements [ClientStore].
func (m *MemoryStore) Client(_ context.Context, id string) (*Client, error) {
	return memGet(m, m.clients, id, cloneClient)
}

// SaveClient implements [ClientStore].
func (m *MemoryStore) SaveClient(_ context.Context, c *Client) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.clients[c.ID]; !ok && len(m.clients) >= maxMemoryClients {
		return oauthErr(oauthmeta.CodeTemporarilyUnavailable, "client registry is full")
	}
	m.clients[c.ID] = cloneClient(c)
	return nil
}

// SaveCode implements [CodeStore].
func (m *MemoryStore) SaveCode(_ context.Context, c *Code) error {
	return memPut(m, m.codes, c.Key, c, cloneCode)
}

// Code implements [CodeStore].
func (m *MemoryStore) Code(_ context.Context, key string) (*Code, error) {
	return memGet(m, m.codes, key, cloneCode)
}

// RedeemCode implements [CodeStore].
func (m *MemoryStore) RedeemCode(_ context.Context, key, grantID string) (*Code, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.codes[key]
	if !ok {
		return nil, ErrNotFound
	}
	if c.RedeemedBy != "" {
		return cloneCode(c), ErrAlreadyUsed
	}
	c.RedeemedBy = grantID
	return cloneCode(c), nil
}

// SaveGrant implements [GrantStore].
func (m *MemoryStore) SaveGrant(_ context.Context, g *Grant) error {
	return memPut(m, m.grants, g.ID, g, cloneGrant)
}

// Grant implements [GrantStore].
func (m *MemoryStore) Grant(_ context.Context, id string) (*Grant, error) {
	return memGet(m, m.grants, id, cloneGrant)
}

// RevokeGrant implements [GrantStore].
func (m *MemoryStore) RevokeGrant(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.grants[id]
	if !ok {
		return ErrNotFound
	}
	g.Revoked = true
	return nil
}

// SaveRefreshToken implements [RefreshTokenStore].
func (m *MemoryStore) SaveRefreshToken(_ context.Context, t *RefreshToken) error {
	return memPut(m, m.refresh, t.Key, t, cloneRefreshToken)
}

// RefreshToken implements [RefreshTokenStore].
func (m *MemoryStore) RefreshToken(_ context.Context, key string) (*RefreshToken, error) {
	return memGet(m, m.refresh, key, cloneRefreshToken)
}

// RotateRefreshToken implements [RefreshTokenStore].
func (m *MemoryStore) RotateRefreshToken(_ context.Context, key string, next *RefreshToken) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.refresh[key]
	if !ok {
		return ErrNotFound
	}
	if t.Rotated {
		return ErrAlreadyUsed
	}
	t.Rotated = true
	m.refresh[next.Key] = cloneRefreshToken(next)
	return nil
}

// UseRefreshToken implements [RefreshTokenUser].
func (m *MemoryStore) UseRefreshToken(_ context.Context, u RefreshUse) (*Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.refresh[u.Key]
	if !ok {
		return nil, ErrNotFound
	}
	g := m.grants[t.GrantID]
	if !u.Admits(t, g) {
		return nil, ErrNotFound
	}
	t.Rotated = true
	m.refresh[u.NextKey] = &RefreshToken{Key: u.NextKey, GrantID: t.GrantID, ClientID: t.ClientID, IssuedAt: u.Now, ExpiresAt: t.ExpiresAt}
	return cloneGrant(g), nil
}

// Consent implements [ConsentStore].
func (m *MemoryStore) Consent(_ context.Context, subject, clientID string) (*Consent, error) {
	return memGet(m, m.consents, [2]string{subject, clientID}, cloneConsent)
}

// SaveConsent implements [ConsentStore].
func (m *MemoryStore) SaveConsent(_ context.Context, c *Consent) error {
	return memPut(m, m.consents, [2]string{c.Subject, c.ClientID}, c, cloneConsent)
}

// SigningKeys implements [KeyStore].
func (m *MemoryStore) SigningKeys(context.Context) ([]*SigningKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*SigningKey, 0, len(m.keys))
	for _, k := range m.keys {
		out = append(out, cloneSigningKey(k))
	}
	return out, nil
}

// SaveSigningKey implements [KeyStore].
func (m *MemoryStore) SaveSigningKey(_ context.Context, k *SigningKey) error {
	return memPut(m, m.keys, k.ID, k, cloneSigningKey)
}

// DeleteSigningKey implements [KeyStore].
func (m *MemoryStore) DeleteSigningKey(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, id)
	return nil
}

// RevokeAccessToken implements [RevocationStore].
func (m *MemoryStore) RevokeAccessToken(_ context.Context, jti string, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.revoked[jti] = expires
	return nil
}

// AccessTokenRevoked implements [RevocationStore].
func (m *MemoryStore) AccessTokenRevoked(_ context.Context, jti string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.revoked[jti]
	return ok, nil
}

// SavePending implements [PendingStore]. The store keeps at most
// [MaxPendingAuthorizations] records: past the bound, a new record pushes
// out the least recently used one, so a flood of logins never grows the
// table (and never refuses a user's login), it only shortens how long the
// oldest requests stay answerable.
func (m *MemoryStore) SavePending(_ context.Context, p *PendingAuthorization) error {
	m.pending.Add(p.ID, clonePending(p), time.Time{})
	return nil
}

// TakePending implements [PendingStore]. A record that is expired at now
// or that match refuses stays in place (expired ones go at the next
// [MemoryStore.Sweep] or are pushed out by new ones).
func (m *MemoryStore) TakePending(_ context.Context, id string, now time.Time, match func(*PendingAuthorization) bool) (*PendingAuthorization, error) {
	p, ok := m.pending.Take(id, func(p *PendingAuthorization) bool {
		return now.Before(p.ExpiresAt) && match(clonePending(p))
	})
	if !ok {
		return nil, ErrNotFound
	}
	return p, nil
}

// dropExpiredPending removes the record under id if it expired at now.
func (m *MemoryStore) dropExpiredPending(id string, now time.Time) {
	m.pending.Take(id, func(p *PendingAuthorization) bool { return !now.Before(p.ExpiresAt) })
}

// Sweep implements [Sweeper]: it drops codes, grants, refresh tokens,
// consents, revocation entries and upstream tokens that expired before
// now, and pending authorizations expired at now.
func (m *MemoryStore) Sweep(_ context.Context, now time.Time) error {
	// Oldest first, so the reads leave the recency order as it was.
	for _, k := range m.pending.Keys() {
		m.dropExpiredPending(k, now)
	}
	m.connect.sweep(now)
	m.sweepDevices(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.codes, func(_ string, c *Code) bool { return c.ExpiresAt.Before(now) })
	maps.DeleteFunc(m.grants, func(_ string, g *Grant) bool { return g.ExpiresAt.Before(now) })
	maps.DeleteFunc(m.refresh, func(_ string, t *RefreshToken) bool { return t.ExpiresAt.Before(now) })
	maps.DeleteFunc(m.consents, func(_ [2]string, c *Consent) bool { return c.ExpiresAt.Before(now) })
	maps.DeleteFunc(m.revoked, func(_ string, exp time.Time) bool { return exp.Before(now) })
	maps.DeleteFunc(m.vault, func(_ string, t *UpstreamTokens) bool { return t.ExpiresAt.Before(now) })
	return nil
}

func cloneClient(c *Client) *Client {
	d := *c
	d.Secret = ""
	d.RedirectURIs = slices.Clone(c.RedirectURIs)
	d.GrantTypes = slices.Clone(c.GrantTypes)
	d.AllowedScopes = slices.Clone(c.AllowedScopes)
	d.DefaultScopes = slices.Clone(c.DefaultScopes)
	return &d
}

func cloneCode(c *Code) *Code {
	d := *c
	d.Scopes = slices.Clone(c.Scopes)
	d.Resources = slices.Clone(c.Resources)
	return &d
}

func cloneGrant(g *Grant) *Grant {
	d := *g
	d.Scopes = slices.Clone(g.Scopes)
	d.Resources = slices.Clone(g.Resources)
	return &d
}

func cloneConsent(c *Consent) *Consent {
	d := *c
	d.Scopes = slices.Clone(c.Scopes)
	d.Resources = slices.Clone(c.Resources)
	d.Browsers = slices.Clone(c.Browsers)
	return &d
}

func cloneRefreshToken(t *RefreshToken) *RefreshToken {
	d := *t
	return &d
}

func cloneSigningKey(k *SigningKey) *SigningKey {
	d := *k
	d.PrivateJWK = slices.Clone(k.PrivateJWK)
	return &d
}
