package authserver

import (
	"context"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// memoryDevices is the [DeviceCodeStore] of a [MemoryStore]: two maps
// under one lock, at most [MaxDeviceCodes] codes.
type memoryDevices struct {
	mu     sync.Mutex
	byKey  map[string]*DeviceCode
	byUser map[string]string // UserCodeKey → Key
}

func newMemoryDevices() *memoryDevices {
	return &memoryDevices{byKey: make(map[string]*DeviceCode), byUser: make(map[string]string)}
}

func (m *MemoryStore) deviceTable() *memoryDevices { return m.devices }

// SaveDeviceCode implements [DeviceCodeStore]. A full store first drops
// the codes that expired before d was issued.
func (m *MemoryStore) SaveDeviceCode(_ context.Context, d *DeviceCode) error {
	t := m.deviceTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byKey[d.Key]; ok {
		return ErrAlreadyUsed
	}
	if _, ok := t.byUser[d.UserCodeKey]; ok {
		return ErrAlreadyUsed
	}
	if len(t.byKey) >= MaxDeviceCodes {
		t.dropExpired(d.IssuedAt, func(c *DeviceCode) bool { return !c.ExpiresAt.After(d.IssuedAt) })
		if len(t.byKey) >= MaxDeviceCodes {
			return oauthErr(oauthmeta.CodeTemporarilyUnavailable, "too many device logins in progress")
		}
	}
	t.byKey[d.Key] = cloneDeviceCode(d)
	t.byUser[d.UserCodeKey] = d.Key
	return nil
}

// DeviceCode implements [DeviceCodeStore].
func (m *MemoryStore) DeviceCode(_ context.Context, key string) (*DeviceCode, error) {
	t := m.deviceTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.byKey[key]
	if !ok {
		return nil, ErrNotFound
	}
	return cloneDeviceCode(d), nil
}

// DeviceCodeByUserCode implements [DeviceCodeStore].
func (m *MemoryStore) DeviceCodeByUserCode(ctx context.Context, userCodeKey string) (*DeviceCode, error) {
	t := m.deviceTable()
	t.mu.Lock()
	key, ok := t.byUser[userCodeKey]
	t.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	return m.DeviceCode(ctx, key)
}

// UpdateDeviceCode implements [DeviceCodeStore].
func (m *MemoryStore) UpdateDeviceCode(_ context.Context, key string, change func(*DeviceCode) error) (*DeviceCode, error) {
	t := m.deviceTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.byKey[key]
	if !ok {
		return nil, ErrNotFound
	}
	c := cloneDeviceCode(d)
	if err := change(c); err != nil {
		return nil, err
	}
	c.Key, c.UserCodeKey = d.Key, d.UserCodeKey
	t.byKey[key] = cloneDeviceCode(c)
	return c, nil
}

// dropExpired removes the codes drop selects; t.mu is held.
func (t *memoryDevices) dropExpired(_ time.Time, drop func(*DeviceCode) bool) {
	for k, d := range t.byKey {
		if drop(d) {
			delete(t.byKey, k)
			delete(t.byUser, d.UserCodeKey)
		}
	}
}

// sweepDevices drops the codes a sweep at now drops ([DeviceCode.Swept]).
func (m *MemoryStore) sweepDevices(now time.Time) {
	t := m.deviceTable()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropExpired(now, func(d *DeviceCode) bool { return d.Swept(now) })
}
