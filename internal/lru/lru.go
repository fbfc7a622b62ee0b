// Package lru is the module's one bounded cache: a fixed number of entries,
// each with an optional expiry, the least recently used dropped first when
// the cache is full. It wraps hashicorp/golang-lru's simplelru with a mutex,
// per-entry expiry read from an injected clock, and no goroutine (golang-lru's
// expirable cache starts one and reads time.Now, so it is not used).
package lru

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/mcpauth/mcpauth/internal/clock"
)

// Cache is a bounded map safe for concurrent use. Create it with [New].
type Cache[K comparable, V any] struct {
	now clock.Func

	mu  sync.Mutex
	lru *simplelru.LRU[K, entry[V]]
}

type entry[V any] struct {
	v       V
	expires time.Time // zero: never
}

// New returns a cache of at most size entries (size < 1 means 1). now is the
// clock used for expiry (nil: time.Now). onEvict, if not nil, is called with
// the lock held for every entry that leaves the cache, whether dropped for
// room, expired, removed or purged; it must not call back into the cache.
func New[K comparable, V any](size int, now func() time.Time, onEvict func(K, V)) *Cache[K, V] {
	var cb simplelru.EvictCallback[K, entry[V]]
	if onEvict != nil {
		cb = func(k K, e entry[V]) { onEvict(k, e.v) }
	}
	l, err := simplelru.NewLRU(max(size, 1), cb)
	if err != nil { // only for size <= 0, excluded above
		panic(err)
	}
	return &Cache[K, V]{now: now, lru: l}
}

// Get returns the value under key and marks it recently used. An expired
// entry is removed and reported missing.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(key)
}

// Take returns the value under key and removes it, in one step, so that
// only one caller gets it. If match is not nil, a value it refuses is left in
// place and reported missing. An expired entry is removed and reported
// missing.
func (c *Cache[K, V]) Take(key K, match func(V) bool) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.getLocked(key)
	if !ok || (match != nil && !match(v)) {
		var zero V
		return zero, false
	}
	c.lru.Remove(key)
	return v, true
}

func (c *Cache[K, V]) getLocked(key K) (V, bool) {
	e, ok := c.lru.Get(key)
	if ok && !e.expires.IsZero() && !c.now.Now().Before(e.expires) {
		c.lru.Remove(key)
		var zero V
		return zero, false
	}
	return e.v, ok // the zero V when missing
}

// Add stores v under key until expires (the zero time: no expiry), dropping
// the least recently used entry if the cache is full.
func (c *Cache[K, V]) Add(key K, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(key, entry[V]{v: v, expires: expires})
}

// GetOrAdd returns the live value under key, marking it recently used, or
// stores and returns mk() until expires when there is none, in one step.
func (c *Cache[K, V]) GetOrAdd(key K, mk func() V, expires time.Time) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.getLocked(key); ok {
		return v
	}
	v := mk()
	c.lru.Add(key, entry[V]{v: v, expires: expires})
	return v
}

// Update stores f(old) under key, without expiry, where old is the live
// value under key or the zero V, in one step, marking key recently used
// and dropping the least recently used entry if the cache is full. f runs
// with the lock held and must not call back into the cache.
func (c *Cache[K, V]) Update(key K, f func(old V) V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, _ := c.getLocked(key)
	c.lru.Add(key, entry[V]{v: f(old)})
}

// Remove deletes the entry under key, if any.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
}

// Purge deletes every entry.
func (c *Cache[K, V]) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge()
}

// Len returns the number of entries held, expired ones included until they
// are read or pushed out.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Keys returns the keys held, least recently used first.
func (c *Cache[K, V]) Keys() []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Keys()
}
