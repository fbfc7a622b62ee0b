package tokenstore

import (
	"context"
	"sync"
)

// Memory is a [Store] that keeps everything in process memory, lost when
// the process exits. The zero value is ready to use; it is safe for
// concurrent use.
type Memory struct {
	mu            sync.RWMutex
	tokens        map[Key]*Token
	registrations map[string]*Registration
	discoveries   map[string]*Discovery
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{} }

var _ Store = (*Memory)(nil)

// Token implements [Store].
func (m *Memory) Token(_ context.Context, k Key) (*Token, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if t, ok := m.tokens[k]; ok {
		return t.Clone(), nil
	}
	return nil, ErrNotFound
}

// PutToken implements [Store].
func (m *Memory) PutToken(_ context.Context, k Key, t *Token) error {
	if err := checkKey(k, t); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = make(map[Key]*Token)
	}
	m.tokens[k] = t.Clone()
	return nil
}

// DeleteToken implements [Store].
func (m *Memory) DeleteToken(_ context.Context, k Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, k)
	return nil
}

// Registration implements [Store].
func (m *Memory) Registration(_ context.Context, issuer string) (*Registration, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if r, ok := m.registrations[issuer]; ok {
		return r.Clone(), nil
	}
	return nil, ErrNotFound
}

// PutRegistration implements [Store].
func (m *Memory) PutRegistration(_ context.Context, r *Registration) error {
	if r == nil || r.Issuer == "" || r.ClientID == "" {
		return ErrInvalid
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.registrations == nil {
		m.registrations = make(map[string]*Registration)
	}
	m.registrations[r.Issuer] = r.Clone()
	return nil
}

// DeleteRegistration implements [Store].
func (m *Memory) DeleteRegistration(_ context.Context, issuer string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.registrations, issuer)
	return nil
}

// Discovery implements [Store].
func (m *Memory) Discovery(_ context.Context, resource string) (*Discovery, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if d, ok := m.discoveries[resource]; ok {
		return d.Clone(), nil
	}
	return nil, ErrNotFound
}

// PutDiscovery implements [Store].
func (m *Memory) PutDiscovery(_ context.Context, d *Discovery) error {
	if d == nil || d.Resource == "" || d.Issuer == "" {
		return ErrInvalid
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.discoveries == nil {
		m.discoveries = make(map[string]*Discovery)
	}
	m.discoveries[d.Resource] = d.Clone()
	return nil
}

func checkKey(k Key, t *Token) error {
	if k.Issuer == "" || k.Resource == "" || k.ClientID == "" || t == nil {
		return ErrInvalid
	}
	return nil
}
