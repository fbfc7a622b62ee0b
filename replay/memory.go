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

// DefaultMaxEntries is the capacity of a [Memory] whose
// MemoryConfig.MaxEntries is zero: about 100 MB of memory when full.
const DefaultMaxEntries = 1 << 20

// MemoryConfig configures a [Memory].
type MemoryConfig struct {
	// MaxEntries bounds the number of live entries. Zero means
	// DefaultMaxEntries; negative is an error. When the store is full of
	// unexpired entries, Use fails with ErrFull.
	MaxEntries int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Memory is the in-memory [Store] of one process: bounded in entries,
// every entry expiring at the instant its caller names and evicted lazily
// on use (no background goroutine, nothing to close). A full Memory
// refuses new keys with [ErrFull] rather than evict a live one that could
// still be replayed. Keys are stored as their SHA-256, so an entry costs
// the same whatever the length of the key, and the map holds no pointers
// for the garbage collector to scan.
//
// Its zero value is not usable; create it with [NewMemory]. It is safe for
// concurrent use.
type Memory struct {
	now clock.Func
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]int64 // key hash -> expiry (Unix ns)
	byExp   expiryHeap
}

// NewMemory validates cfg and returns an empty store. It starts no
// goroutine.
func NewMemory(cfg MemoryConfig) (*Memory, error) {
	if cfg.MaxEntries < 0 {
		return nil, errors.New("replay: MaxEntries is negative")
	}
	m := &Memory{now: cfg.Now, max: cfg.MaxEntries}
	if m.max == 0 {
		m.max = DefaultMaxEntries
	}
	m.entries = make(map[[sha256.Size]byte]int64)
	return m, nil
}

// Use implements [Store]. An until at or before the current time records
// nothing and succeeds, unless the key is still recorded from before.
func (m *Memory) Use(_ context.Context, key string, until time.Time) error {
	h := sha256.Sum256([]byte(key))
	now := m.now.Now().UnixNano()
	exp := until.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked(now)
	if _, ok := m.entries[h]; ok {
		return ErrReplayed
	}
	if exp <= now {
		return nil
	}
	if len(m.entries) >= m.max {
		return ErrFull
	}
	m.entries[h] = exp
	heap.Push(&m.byExp, entry{exp: exp, key: h})
	return nil
}

// Len returns the number of entries currently held, expired ones included
// until the next Use evicts them.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// evictLocked drops every entry whose expiry is at or before now.
func (m *Memory) evictLocked(now int64) {
	for len(m.byExp) > 0 && m.byExp[0].exp <= now {
		e := heap.Pop(&m.byExp).(entry)
		if m.entries[e.key] == e.exp {
			delete(m.entries, e.key)
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
