package redislimit_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/redislimit"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/resource"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// TestSharedBudget: two stores on one Redis (two replicas) share each key's
// budget exactly, even under concurrent requests; the bucket refills with
// time; other keys are separate; with Redis stopped, Allow fails.
func TestSharedBudget(t *testing.T) {
	rd := testdb.StartRedis(t)
	c, err := redisreplay.NewClient(rd.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := redislimit.New(c, "test:"), redislimit.New(c, "test:")
	ctx := context.Background()
	rate := resource.Rate{PerSecond: 2, Burst: 10}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			ok, _, err := s.Allow(ctx, "alice/*", rate, t0)
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != 10 {
		t.Fatalf("%d of 40 concurrent requests allowed across two replicas, want the burst of 10", n)
	}
	ok, wait, err := b.Allow(ctx, "alice/*", rate, t0)
	if ok || err != nil || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %v, %v; want refused for 500ms", ok, wait, err)
	}
	if ok, _, _ := a.Allow(ctx, "alice/*", rate, t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("refused after the refill interval")
	}
	if ok, _, _ := a.Allow(ctx, "bob/*", rate, t0); !ok {
		t.Fatal("another key shares alice's bucket")
	}
	if ok, _, _ := redislimit.New(c, "other:").Allow(ctx, "alice/*", rate, t0); !ok {
		t.Fatal("another prefix shares the bucket")
	}
	rd.Stop()
	if ok, _, err := a.Allow(ctx, "carol/*", rate, t0); ok || err == nil {
		t.Fatalf("with Redis stopped: %v, %v; want an error", ok, err)
	}
}

// TestMiddlewareOnRedis: a resource server whose limits are on Redis
// answers 429 once the identity's shared burst is spent, and 503 (never
// an allowed request) when Redis is down.
func TestMiddlewareOnRedis(t *testing.T) {
	rd := testdb.StartRedis(t)
	c, err := redisreplay.NewClient(rd.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fx := newResourceFixture(t, &resource.RateLimit{Identity: resource.Rate{PerSecond: 0.01, Burst: 2}, Store: redislimit.New(c, "rs:")})
	tok := fx.token("alice")
	want := []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests}
	for i, w := range want {
		if got := fx.status(tok); got != w {
			t.Fatalf("request %d: %d, want %d", i+1, got, w)
		}
	}
	rd.Stop()
	if got := fx.status(fx.token("bob")); got != http.StatusServiceUnavailable {
		t.Fatalf("with Redis down: %d, want 503", got)
	}
}
