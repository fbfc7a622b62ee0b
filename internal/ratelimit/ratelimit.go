// Package ratelimit is the module's one rate limiter: a bounded table of
// GCRA (generic cell rate algorithm) states, one per key, sharded by key
// hash, each shard a fixed-size LRU (internal/lru), so that lookup, insert
// and eviction cost the same whatever the table holds. GCRA keeps one
// time per key (the theoretical arrival time) and behaves as a token
// bucket of Burst requests refilled at PerSecond.
package ratelimit

import (
	"hash/maphash"
	"math"
	"time"

	"github.com/mcpauth/mcpauth/internal/lru"
)

// shardMin is the least number of keys per shard: smaller tables have one
// shard, so that their bound and eviction order are exact.
const (
	shardMin  = 1024
	maxShards = 16
)

// Rate is a sustained rate and a burst. PerSecond +Inf means no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Unlimited reports whether r lets everything through.
func (r Rate) Unlimited() bool { return math.IsInf(r.PerSecond, 1) }

// Interval is the emission interval of r: the time one request costs.
func (r Rate) Interval() time.Duration {
	if r.Unlimited() || !(r.PerSecond > 0) {
		return 0
	}
	return time.Duration(float64(time.Second) / r.PerSecond)
}

// Decide applies GCRA to the stored theoretical arrival time tat (zero:
// a key never seen) at now, and returns whether the request is allowed,
// the new tat to store when it is, and otherwise how long to wait.
func (r Rate) Decide(tat, now time.Time) (ok bool, next time.Time, wait time.Duration) {
	t := r.Interval()
	if tat.Before(now) {
		tat = now
	}
	next = tat.Add(t)
	allowAt := next.Add(-time.Duration(max(r.Burst, 1)) * t)
	if now.Before(allowAt) {
		return false, tat, allowAt.Sub(now)
	}
	return true, next, 0
}

// Table is a bounded table of GCRA states of one [Rate]. It is safe for
// concurrent use.
type Table[K comparable] struct {
	rate   Rate
	seed   maphash.Seed
	shards []*lru.Cache[K, time.Time]
}

// New returns a table of at most maxTracked keys (at least one) whose
// limit is r. A full shard forgets its least recently used key, whose
// next request starts with a full bucket.
func New[K comparable](r Rate, maxTracked int) *Table[K] {
	maxTracked = max(maxTracked, 1)
	n := min(maxShards, max(1, maxTracked/shardMin))
	t := &Table[K]{rate: r, seed: maphash.MakeSeed(), shards: make([]*lru.Cache[K, time.Time], n)}
	for i := range t.shards {
		t.shards[i] = lru.New[K, time.Time](maxTracked/n, nil, nil)
	}
	return t
}

func (t *Table[K]) shard(key K) *lru.Cache[K, time.Time] {
	if len(t.shards) == 1 {
		return t.shards[0]
	}
	return t.shards[maphash.Comparable(t.seed, key)%uint64(len(t.shards))]
}

// Allow reports whether one more request for key is allowed at now, and
// if not, how long to wait. A refused request counts as a use of key for
// the eviction order, but spends nothing.
func (t *Table[K]) Allow(key K, now time.Time) (bool, time.Duration) {
	if t.rate.Unlimited() {
		return true, 0
	}
	s := t.shard(key)
	var (
		ok   bool
		wait time.Duration
	)
	s.Update(key, func(tat time.Time) time.Time {
		var next time.Time
		ok, next, wait = t.rate.Decide(tat, now)
		return next
	})
	return ok, wait
}

// Peek reports whether one more request for key would be allowed at now,
// without spending it; it marks key as recently used, as Allow does.
func (t *Table[K]) Peek(key K, now time.Time) bool {
	if t.rate.Unlimited() {
		return true
	}
	tat, _ := t.shard(key).Get(key)
	ok, _, _ := t.rate.Decide(tat, now)
	return ok
}

// Len is the number of keys in the table.
func (t *Table[K]) Len() int {
	n := 0
	for _, s := range t.shards {
		n += s.Len()
	}
	return n
}

// Keys returns the keys of a one-shard table, least recently used first.
func (t *Table[K]) Keys() []K {
	var out []K
	for _, s := range t.shards {
		out = append(out, s.Keys()...)
	}
	return out
}
