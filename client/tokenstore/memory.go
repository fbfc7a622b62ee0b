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

// cloner is an entry type of the store: *Token, *Registration, *Discovery.
type cloner[V any] interface{ Clone() V }

// memGet returns a copy of (*entries)[k], or ErrNotFound.
func memGet[K comparable, V cloner[V]](m *Memory, entries *map[K]V, k K) (V, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := (*entries)[k]
	if !ok {
		return v, ErrNotFound
	}
	return v.Clone(), nil
}

// memSet stores a copy of v under k, or deletes k when del is set.
func memSet[K comparable, V cloner[V]](m *Memory, entries *map[K]V, k K, v V, del bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case del:
		delete(*entries, k)
	case *entries == nil:
		*entries = map[K]V{k: v.Clone()}
	default:
		(*entries)[k] = v.Clone()
	}
}

// Token implements [Store].
func (m *Memory) Token(_ context.Context, k Key) (*Token, error) { return memGet(m, &m.tokens, k) }

// PutToken implements [Store].
func (m *Memory) PutToken(_ context.Context, k Key, t *Token) error {
	if err := checkKey(k, t); err != nil {
		return err
	}
	memSet(m, &m.tokens, k, t, false)
	return nil
}

// DeleteToken implements [Store].
func (m *Memory) DeleteToken(_ context.Context, k Key) error {
	memSet(m, &m.tokens, k, nil, true)
	return nil
}

// Registration implements [Store].
func (m *Memory) Registration(_ context.Context, issuer string) (*Registration, error) {
	return memGet(m, &m.registrations, issuer)
}

// PutRegistration implements [Store].
func (m *Memory) PutRegistration(_ context.Context, r *Registration) error {
	if r == nil || r.Issuer == "" || r.ClientID == "" {
		return ErrInvalid
	}
	memSet(m, &m.registrations, r.Issuer, r, false)
	return nil
}

// DeleteRegistration implements [Store].
func (m *Memory) DeleteRegistration(_ context.Context, issuer string) error {
	memSet(m, &m.registrations, issuer, nil, true)
	return nil
}

// Discovery implements [Store].
func (m *Memory) Discovery(_ context.Context, resource string) (*Discovery, error) {
	return memGet(m, &m.discoveries, resource)
}

// PutDiscovery implements [Store].
func (m *Memory) PutDiscovery(_ context.Context, d *Discovery) error {
	if d == nil || d.Resource == "" || d.Issuer == "" {
		return ErrInvalid
	}
	memSet(m, &m.discoveries, d.Resource, d, false)
	return nil
}

func checkKey(k Key, t *Token) error {
	if k.Issuer == "" || k.Resource == "" || k.ClientID == "" || t == nil {
		return ErrInvalid
	}
	return nil
}
