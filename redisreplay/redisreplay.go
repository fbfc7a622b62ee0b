package redisreplay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpauth/mcpauth/replay"
)

// Timeouts of a client from [NewClient]: a replay check waits at most
// about this long before failing closed.
const (
	DialTimeout = 2 * time.Second
	IOTimeout   = time.Second
)

// NewClient returns a Redis client for url (redis:// or rediss://, as
// redis.ParseURL accepts) with bounded dial, read, write and pool
// timeouts and one retry. It connects lazily; Close releases it.
func NewClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		// go-redis's message may echo the URL, password included.
		return nil, errors.New("redisreplay: not a valid redis:// URL")
	}
	opt.DialTimeout = DialTimeout
	opt.ReadTimeout = IOTimeout
	opt.WriteTimeout = IOTimeout
	opt.PoolTimeout = IOTimeout + time.Second
	opt.MaxRetries = 1
	return redis.NewClient(opt), nil
}

// Store is a [replay.Store] on Redis. It is safe for concurrent use.
type Store struct {
	c      redis.Cmdable
	prefix string
}

// New returns a store on c for dpop.VerifierConfig.Replay,
// resource.DPoPConfig.Replay or authserver.Config.Replay. prefix
// namespaces its keys (for example "mcpauth:rs:" plus the resource URL, or
// "mcpauth:as:" plus the issuer): every replica of one resource or issuer
// must use the same prefix, and different services different ones. New
// sends nothing to Redis.
func New(c redis.Cmdable, prefix string) *Store {
	return &Store{c: c, prefix: prefix}
}

// Use implements [replay.Store]: it records key until the instant until,
// and returns [replay.ErrReplayed] if key is already recorded, or another
// error if Redis could not record it (or until is zero).
func (s *Store) Use(ctx context.Context, key string, until time.Time) error {
	sum := sha256.Sum256([]byte(key))
	k := s.prefix + hex.EncodeToString(sum[:])
	// Without an expiry SET would keep the key forever: refuse instead.
	if until.IsZero() {
		return errors.New("redisreplay: an identifier needs an expiry")
	}
	// A key whose time is over needs no record: Redis drops it at once.
	until = until.Truncate(time.Millisecond)
	ok, err := s.c.SetArgs(ctx, k, "1", redis.SetArgs{Mode: "NX", ExpireAt: until}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return replay.ErrReplayed
	case err != nil:
		return fmt.Errorf("redisreplay: recording the identifier failed: %w", err)
	case ok != "OK":
		return fmt.Errorf("redisreplay: unexpected answer %q", ok)
	}
	return nil
}
