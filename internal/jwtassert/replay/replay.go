package replay

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
)

// Sentinel errors returned by [Store.Use].
var (
	// ErrReplayed: the key was used before and has not expired yet.
	ErrReplayed = errors.New("replay: identifier already used")
	// ErrFull: the cache holds its maximum number of live entries, so it
	// cannot remember one more; the caller must refuse the JWT (fail closed).
	ErrFull = errors.New("replay: cache full")
)

// DefaultMaxEntries is the capacity of a [Cache] whose Config.MaxEntries is
// zero: about 100 MB of memory when full.
const DefaultMaxEntries = 1 << 20

// Store records single-use keys. Use reports [ErrReplayed] if key was
// recorded before and has not expired, and otherwise records it until the
// instant until. Implementations must be safe for concurrent use and must
// fail closed: any error other than nil means the JWT is refused.
type Store interface {
	Use(ctx context.Context, key string, until time.Time) error
}

// Config configures a [Cache].
type Config struct {
	// MaxEntries bounds the number of live entries. Zero means
	// DefaultMaxEntries; negative is an error. When the cache is full of
	// unexpired entries, Use fails with ErrFull.
	MaxEntries int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Cache is the in-memory [Store]. Its zero value is not usable; create it
// with [New]. It is safe for concurrent use.
type Cache struct {
	now clock.Func
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]int64 // key hash -> expiry (Unix ns)
	byExp   expiryHeap
}

// New validates cfg and returns an empty cache. It starts no goroutine.
func New(cfg Config) (*Cache, error) {
	if cfg.MaxEntries < 0 {
		return nil, errors.New("replay: MaxEntries is negative")
	}
	c := &Cache{now: cfg.Now, max: cfg.MaxEntries}
	if c.max == 0 {
		c.max = DefaultMaxEntries
	}
	c.entries = make(map[[sha256.Size]byte]int64)
	return c, nil
}

// Use implements [Store]. An until at or before the current time records
// nothing and succeeds: such a key could not be accepted anyway.
func (c *Cache) Use(_ context.Context, key string, until time.Time) error {
	h := sha256.Sum256([]byte(key))
	now := c.now.Now().UnixNano()
	exp := until.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(now)
	if _, ok := c.entries[h]; ok {
		return ErrReplayed
	}
	if exp <= now {
		return nil
	}
	if len(c.entries) >= c.max {
		return ErrFull
	}
	c.entries[h] = exp
	heap.Push(&c.byExp, entry{exp: exp, key: h})
	return nil
}

// Len returns the number of entries currently held, expired ones included
// until the next Use evicts them.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// evictLocked drops every entry whose expiry is at or before now.
func (c *Cache) evictLocked(now int64) {
	for len(c.byExp) > 0 && c.byExp[0].exp <= now {
		e := heap.Pop(&c.byExp).(entry)
		if c.entries[e.key] == e.exp {
			delete(c.entries, e.key)
		}
	}
}

type entry struct {
	exp int64
	key [sha256.Size]byte
}

// expiryHeap is a min-heap of entries by expiry.
type expiryHeap []entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].exp < h[j].exp }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	*h = old[:n-1]
	return e
}
