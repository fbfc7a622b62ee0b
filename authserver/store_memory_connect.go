package authserver

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// memConnect is the [ConnectStore] part of a [MemoryStore].
type memConnect struct {
	mu       sync.Mutex
	accounts map[[2]string]*ConnectedAccount
	tickets  map[string]*ConnectTicket
}

func newMemConnect() *memConnect {
	return &memConnect{accounts: make(map[[2]string]*ConnectedAccount), tickets: make(map[string]*ConnectTicket)}
}

func cloneAccount(a *ConnectedAccount) *ConnectedAccount { d := *a; return &d }
func cloneTicket(t *ConnectTicket) *ConnectTicket        { d := *t; return &d }

func (c *memConnect) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.accounts, func(_ [2]string, a *ConnectedAccount) bool { return a.ExpiresAt.Before(now) })
	maps.DeleteFunc(c.tickets, func(_ string, t *ConnectTicket) bool { return !now.Before(t.ExpiresAt) })
}

// ConnectedAccount implements [ConnectStore].
func (m *MemoryStore) ConnectedAccount(_ context.Context, subject, provider string) (*ConnectedAccount, error) {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.accounts[[2]string{subject, provider}]
	if !ok {
		return nil, ErrNotFound
	}
	return cloneAccount(a), nil
}

// SaveConnectedAccount implements [ConnectStore].
func (m *MemoryStore) SaveConnectedAccount(_ context.Context, a *ConnectedAccount) error {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	c.accounts[[2]string{a.Subject, a.Provider}] = cloneAccount(a)
	return nil
}

// DeleteConnectedAccount implements [ConnectStore].
func (m *MemoryStore) DeleteConnectedAccount(_ context.Context, a *ConnectedAccount) error {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	k := [2]string{a.Subject, a.Provider}
	if old, ok := c.accounts[k]; ok && old.Tokens == a.Tokens {
		delete(c.accounts, k)
	}
	return nil
}

// ConnectedAccountsOfGrant implements [ConnectStore].
func (m *MemoryStore) ConnectedAccountsOfGrant(_ context.Context, grantID string) ([]*ConnectedAccount, error) {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*ConnectedAccount
	for _, a := range c.accounts {
		if a.GrantID == grantID {
			out = append(out, cloneAccount(a))
		}
	}
	return out, nil
}

// SaveConnectTicket implements [ConnectStore]; past [MaxConnectTickets]
// tickets it answers temporarily_unavailable.
func (m *MemoryStore) SaveConnectTicket(_ context.Context, t *ConnectTicket) error {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tickets[t.ID]; !ok && len(c.tickets) >= MaxConnectTickets {
		// The server's sweep drops expired tickets every minute.
		return &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable, Description: "too many connect flows in progress; try again later"}
	}
	c.tickets[t.ID] = cloneTicket(t)
	return nil
}

// ConnectTicket implements [ConnectStore].
func (m *MemoryStore) ConnectTicket(_ context.Context, id string, now time.Time) (*ConnectTicket, error) {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tickets[id]
	if !ok || !now.Before(t.ExpiresAt) {
		return nil, ErrNotFound
	}
	return cloneTicket(t), nil
}

// TakeConnectTicket implements [ConnectStore].
func (m *MemoryStore) TakeConnectTicket(_ context.Context, id string, now time.Time, match func(*ConnectTicket) bool) (*ConnectTicket, error) {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tickets[id]
	if !ok || !now.Before(t.ExpiresAt) || !match(cloneTicket(t)) {
		return nil, ErrNotFound
	}
	delete(c.tickets, id)
	return cloneTicket(t), nil
}
