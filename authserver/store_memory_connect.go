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
	// refs indexes the reference tickets by subject.
	refs map[string]map[string]struct{}
}

func newMemConnect() *memConnect {
	return &memConnect{accounts: make(map[[2]string]*ConnectedAccount), tickets: make(map[string]*ConnectTicket),
		refs: make(map[string]map[string]struct{})}
}

func cloneAccount(a *ConnectedAccount) *ConnectedAccount { d := *a; return &d }
func cloneTicket(t *ConnectTicket) *ConnectTicket        { d := *t; return &d }

func (c *memConnect) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.accounts, func(_ [2]string, a *ConnectedAccount) bool { return a.ExpiresAt.Before(now) })
	maps.DeleteFunc(c.tickets, func(_ string, t *ConnectTicket) bool {
		if now.Before(t.ExpiresAt) {
			return false
		}
		c.unindex(t)
		return true
	})
}

// isRef reports whether t is a reference counted against its subject.
func isRef(t *ConnectTicket) bool { return t.Kind == TicketRef && t.Subject != "" }

// unindex removes t from the subject index.
func (c *memConnect) unindex(t *ConnectTicket) {
	if !isRef(t) {
		return
	}
	set := c.refs[t.Subject]
	delete(set, t.ID)
	if len(set) == 0 {
		delete(c.refs, t.Subject)
	}
}

// makeRoom drops the subject's references that expire first until a new
// one fits under MaxConnectRefsPerSubject; its cost is bounded by that.
func (c *memConnect) makeRoom(subject string) {
	set := c.refs[subject]
	for len(set) >= MaxConnectRefsPerSubject {
		var oldest *ConnectTicket
		for id := range set {
			if t := c.tickets[id]; oldest == nil || t.ExpiresAt.Before(oldest.ExpiresAt) ||
				(t.ExpiresAt.Equal(oldest.ExpiresAt) && t.ID < oldest.ID) {
				oldest = t
			}
		}
		delete(c.tickets, oldest.ID)
		c.unindex(oldest)
	}
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
// tickets it answers temporarily_unavailable, and a reference past
// [MaxConnectRefsPerSubject] of its subject displaces the oldest.
func (m *MemoryStore) SaveConnectTicket(_ context.Context, t *ConnectTicket) error {
	c := m.connect
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tickets[t.ID]; !ok && len(c.tickets) >= MaxConnectTickets {
		// The server's sweep drops expired tickets every minute.
		return &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable, Description: "too many connect flows in progress; try again later"}
	}
	if old, ok := c.tickets[t.ID]; ok {
		c.unindex(old)
	}
	if isRef(t) {
		c.makeRoom(t.Subject)
		if c.refs[t.Subject] == nil {
			c.refs[t.Subject] = make(map[string]struct{})
		}
		c.refs[t.Subject][t.ID] = struct{}{}
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
	c.unindex(t)
	return cloneTicket(t), nil
}
