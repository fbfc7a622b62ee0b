package resource

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
	"unsafe"
)

// Defaults applied to zero-valued [CacheConfig] fields.
const (
	DefaultCacheEntries = 10000
	DefaultCacheBytes   = 16 << 20
	DefaultCacheMaxAge  = 5 * time.Minute
)

// CacheConfig bounds the verified-token cache: a repeated token is
// recognised without checking its signature again, until its "exp" or
// MaxAge after it was verified, whichever comes first. The zero value is an
// enabled cache with the defaults.
type CacheConfig struct {
	// Disabled turns the cache off, so every request is verified in full.
	Disabled bool
	// MaxEntries bounds the number of cached tokens. Zero means
	// [DefaultCacheEntries].
	MaxEntries int
	// MaxBytes bounds the estimated memory of the entries (token, claims
	// and a fixed per-entry overhead). Zero means [DefaultCacheBytes].
	MaxBytes int64
	// MaxAge bounds how long a verification is reused; a key removed from
	// the issuer's key set stops being honoured for cached tokens after at
	// most MaxAge. Zero means [DefaultCacheMaxAge].
	MaxAge time.Duration
}

const (
	cacheShards = 16
	// entryOverhead estimates the memory of an entry beyond the token and
	// claims bytes: the entry, the TokenInfo, its strings and slices, and
	// the map and queue slots. Measured by BenchmarkCacheMemory.
	entryOverhead = 512
)

// tokenCache maps a keyed hash of a token to its verification result. The
// token itself is kept in the entry and compared in constant time on every
// hit, so a hash collision can never lend one token another's identity.
// It is safe for concurrent use.
type tokenCache struct {
	seed   maphash.Seed
	maxAge time.Duration
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu         sync.RWMutex
	m          map[uint64]*authValue
	queue      []*authValue // insertion order, for eviction
	head       int
	bytes      int64
	maxEntries int
	maxBytes   int64
	_          [40]byte // keep shards on separate cache lines
}

func newTokenCache(cfg CacheConfig) (*tokenCache, error) {
	if cfg.MaxEntries < 0 || cfg.MaxBytes < 0 || cfg.MaxAge < 0 {
		return nil, fmt.Errorf("%w: negative cache bound", ErrInvalidConfig)
	}
	if cfg.Disabled {
		return nil, nil
	}
	cfg.MaxEntries = cmp.Or(cfg.MaxEntries, DefaultCacheEntries)
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, DefaultCacheBytes)
	cfg.MaxAge = cmp.Or(cfg.MaxAge, DefaultCacheMaxAge)
	c := &tokenCache{seed: maphash.MakeSeed(), maxAge: cfg.MaxAge}
	for i := range c.shards {
		s := &c.shards[i]
		s.maxEntries = (cfg.MaxEntries + cacheShards - 1) / cacheShards
		s.m = make(map[uint64]*authValue, min(s.maxEntries, 1024))
		s.maxBytes = cfg.MaxBytes / cacheShards
	}
	return c, nil
}

func (c *tokenCache) shard(h uint64) *cacheShard { return &c.shards[h%cacheShards] }

// get returns the cached result for token, or nil.
func (c *tokenCache) get(token string, now time.Time) *authValue {
	av, _ := c.lookup(token, now)
	return av
}

// lookup returns the cached result for token, or nil, and the token's
// keyed hash, which putHashed takes so that a miss followed by an insert
// hashes the token once.
func (c *tokenCache) lookup(token string, now time.Time) (*authValue, uint64) {
	if c == nil {
		return nil, 0
	}
	h := maphash.String(c.seed, token)
	s := c.shard(h)
	s.mu.RLock()
	e := s.m[h]
	s.mu.RUnlock()
	if e == nil || !now.Before(e.until) || !equalConstantTime(e.token, token) {
		return nil, h
	}
	return e, h
}

// put stores a verification result until min(exp, now+maxAge). The cache
// owns av's bookkeeping fields from then on; av must not be put twice.
func (c *tokenCache) put(av *authValue, exp, now time.Time) {
	if c == nil {
		return
	}
	c.putHashed(av, maphash.String(c.seed, av.token), exp, now)
}

// putHashed is put with av.token's hash h from lookup.
func (c *tokenCache) putHashed(av *authValue, h uint64, exp, now time.Time) {
	if c == nil {
		return
	}
	until := now.Add(c.maxAge)
	if exp.Before(until) {
		until = exp
	}
	if !now.Before(until) {
		return
	}
	e := av
	// The claims are held twice: as JSON, and as the string their values
	// are substrings of.
	e.cache, e.key, e.until, e.size = c, h, until, int64(len(av.token)+2*len(av.info.Claims))+entryOverhead
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[h]; old != nil {
		s.bytes -= old.size
		old.inMap = false
	}
	s.m[h] = e
	e.inMap = true
	s.queue = append(s.queue, e)
	s.bytes += e.size
	s.evict(now)
}

// grow adds n bytes to the size of av, if av is still in the cache, and
// evicts what the byte bound then requires.
func (c *tokenCache) grow(av *authValue, n int64, now time.Time) {
	s := c.shard(av.key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !av.inMap {
		return
	}
	av.size += n
	s.bytes += n
	s.evict(now)
}

// evict drops entries from the head of the queue while the shard is over
// its bounds or the head is stale (replaced) or expired.
func (s *cacheShard) evict(now time.Time) {
	for s.head < len(s.queue) {
		e := s.queue[s.head]
		live := e.inMap // s.m[e.key] == e, without a map probe
		if live && now.Before(e.until) && len(s.m) <= s.maxEntries && s.bytes <= s.maxBytes {
			break
		}
		s.queue[s.head] = nil
		s.head++
		if live {
			delete(s.m, e.key)
			e.inMap = false
			s.bytes -= e.size
		}
	}
	if s.head > 64 && s.head > len(s.queue)/2 {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue = s.queue[:n]
		s.head = 0
	}
}

// len reports the number of cached entries (tests and benchmarks).
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// equalConstantTime compares two strings in time that depends only on
// their lengths (crypto/subtle), through read-only byte views of the
// strings so that the cache-hit path does not copy the token.
func equalConstantTime(a, b string) bool {
	x := unsafe.Slice(unsafe.StringData(a), len(a))
	y := unsafe.Slice(unsafe.StringData(b), len(b))
	return subtle.ConstantTimeCompare(x, y) == 1
}
