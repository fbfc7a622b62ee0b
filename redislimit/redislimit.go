// Package redislimit keeps the rate-limit buckets of resource.RateLimit on
// Redis, so that replicas of one MCP server share each identity's budget.
//
// Each bucket is one key holding a GCRA theoretical arrival time, read and
// advanced by one Lua script (EVALSHA, atomic on the server), so that
// concurrent requests on any replicas spend one budget exactly. A key
// expires when its bucket would be full again, so Redis holds only the
// identities active within a burst's refill time. Keys are a prefix and a
// fixed-size digest of the identity and the rule, never anything a caller
// chose.
//
// It fails closed: when Redis cannot be reached or answers with an error,
// Allow returns the error and the middleware refuses the request with 503.
//
//	c, _ := redisreplay.NewClient("redis://127.0.0.1:6379/0")
//	cfg.RateLimit = &resource.RateLimit{Identity: resource.Rate{PerSecond: 5, Burst: 20},
//		Store: redislimit.New(c, "mcpauth:rl:https://mcp.example.com/mcp:")}
package redislimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpauth/mcpauth/resource"
)

// gcra advances the bucket KEYS[1] at ARGV[1] (now, µs since the epoch)
// for a rate of one request per ARGV[2] µs and a burst of ARGV[3]. It
// returns 0 when the request is allowed, else the µs to wait.
var gcra = redis.NewScript(`
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nexttat = tat + t
local allowat = nexttat - burst * t
if now < allowat then return allowat - now end
redis.call('SET', KEYS[1], string.format('%d', nexttat), 'PX', math.floor((nexttat - now) / 1000) + 1)
return 0
`)

// Store is a resource.RateLimitStore on Redis. It is safe for concurrent
// use.
type Store struct {
	c      redis.Scripter
	prefix string
}

// New returns a store on c (redisreplay.NewClient opens one with bounded
// timeouts). prefix namespaces its keys, for example "mcpauth:rl:" and the
// resource URL: every replica of one resource must use the same prefix.
// New sends nothing to Redis.
func New(c redis.Scripter, prefix string) *Store {
	return &Store{c: c, prefix: prefix}
}

// Allow implements resource.RateLimitStore.
func (s *Store) Allow(ctx context.Context, key string, r resource.Rate, now time.Time) (bool, time.Duration, error) {
	if !(r.PerSecond > 0) || math.IsInf(r.PerSecond, 0) || r.Burst < 1 {
		return false, 0, fmt.Errorf("redislimit: invalid rate")
	}
	interval := max(int64(1e6/r.PerSecond), 1)
	wait, err := gcra.Run(ctx, s.c, []string{s.prefix + key}, now.UnixMicro(), interval, r.Burst).Int64()
	if err != nil {
		return false, 0, fmt.Errorf("redislimit: %w", err)
	}
	if wait > 0 {
		return false, time.Duration(wait) * time.Microsecond, nil
	}
	return true, 0, nil
}

var _ resource.RateLimitStore = (*Store)(nil)
