package redisreplay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/replay"
)

// TestUse: an identifier is accepted once across clients (replicas), even
// when they race; a replay wraps replay.ErrReplayed; prefixes keep
// services apart; a past expiry records nothing; with Redis down every use
// fails, and not as a replay.
func TestUse(t *testing.T) {
	ctx := context.Background()
	r := testdb.StartRedis(t)
	clients := make([]*redisreplayClient, 2)
	for i := range clients {
		c, err := redisreplay.NewClient(r.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = &redisreplayClient{raw: c, rs: redisreplay.New(c, "rs:"), as: redisreplay.New(c, "as:")}
	}
	until := time.Now().Add(time.Minute)

	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			err := clients[i%2].rs.Use(ctx, "jkt|jti-1", until)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, replay.ErrReplayed):
				t.Errorf("Use = %v, want replay.ErrReplayed", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d concurrent uses accepted, want 1", wins.Load())
	}
	if err := clients[0].as.Use(ctx, "jkt|jti-1", until); err != nil {
		t.Fatalf("another prefix saw the key: %v", err)
	}
	if err := clients[1].as.Use(ctx, "jkt|jti-1", until); !errors.Is(err, replay.ErrReplayed) {
		t.Fatalf("replay under the other prefix: %v, want replay.ErrReplayed", err)
	}
	for range 2 {
		if err := clients[0].rs.Use(ctx, "expired", time.Now().Add(-time.Second)); err != nil {
			t.Fatalf("past expiry: %v", err)
		}
	}

	// No expiry is refused, not recorded forever, and not as a replay.
	if err := clients[0].rs.Use(ctx, "no-expiry", time.Time{}); err == nil || errors.Is(err, replay.ErrReplayed) {
		t.Fatalf("zero expiry: %v, want a failure that is not a replay", err)
	}
	if n, err := clients[0].raw.Exists(ctx, "rs:"+hexSHA256("no-expiry")).Result(); err != nil || n != 0 {
		t.Fatalf("zero expiry recorded a key: %d %v", n, err)
	}

	r.Stop()
	for _, s := range []*redisreplay.Store{clients[0].rs, clients[1].as} {
		err := s.Use(ctx, "jkt|jti-2", until)
		if err == nil || errors.Is(err, replay.ErrReplayed) {
			t.Fatalf("with Redis down: %v; want a failure that is not a replay", err)
		}
	}
	r.Restart()
	if err := clients[0].rs.Use(ctx, "jkt|jti-2", until); err != nil {
		t.Fatalf("after Redis is back: %v", err)
	}
}

// redisreplay.Store is the one replay seam every verifier takes.
var _ replay.Store = (*redisreplay.Store)(nil)

type redisreplayClient struct {
	raw    *redis.Client
	rs, as *redisreplay.Store
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestNewClientHidesURL(t *testing.T) {
	_, err := redisreplay.NewClient("redis://user:s3cret@[::1")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("NewClient = %v", err)
	}
}
