package replay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/replay"
)

type fakeClock struct{ ns atomic.Int64 }

func newClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestMemoryUse(t *testing.T) {
	t.Parallel()
	type step struct {
		advance time.Duration
		key     string
		ttl     time.Duration
		wantErr error
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"first use succeeds", 0, []step{{0, "a", time.Minute, nil}}},
		{"replay refused", 0, []step{
			{0, "a", time.Minute, nil},
			{time.Second, "a", time.Minute, replay.ErrReplayed},
		}},
		{"distinct keys", 0, []step{
			{0, "a", time.Minute, nil},
			{0, "b", time.Minute, nil},
		}},
		{"expired entry forgotten", 0, []step{
			{0, "a", time.Minute, nil},
			{time.Minute, "a", time.Minute, nil},
		}},
		{"live until the last instant", 0, []step{
			{0, "a", time.Minute, nil},
			{time.Minute - time.Nanosecond, "a", time.Minute, replay.ErrReplayed},
		}},
		{"past expiry records nothing", 0, []step{
			{0, "a", -time.Second, nil},
			{0, "a", time.Minute, nil},
			{0, "a", time.Minute, replay.ErrReplayed},
		}},
		{"full store fails closed", 2, []step{
			{0, "a", time.Minute, nil},
			{0, "b", time.Minute, nil},
			{0, "c", time.Minute, replay.ErrFull},
			{0, "a", time.Minute, replay.ErrReplayed},
		}},
		{"full store frees expired entries", 2, []step{
			{0, "a", time.Minute, nil},
			{0, "b", 2 * time.Minute, nil},
			{time.Minute, "c", time.Minute, nil},
			{0, "b", time.Minute, replay.ErrReplayed},
		}},
		{"out-of-order expiries", 0, []step{
			{0, "long", time.Hour, nil},
			{0, "short", time.Second, nil},
			{2 * time.Second, "short", time.Second, nil},
			{0, "long", time.Hour, replay.ErrReplayed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			c, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: tt.max, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				clk.Advance(s.advance)
				err := c.Use(context.Background(), s.key, clk.Now().Add(s.ttl))
				if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
					t.Fatalf("step %d: Use(%q) = %v, want %v", i, s.key, err, s.wantErr)
				}
			}
		})
	}
}

func TestNewMemoryRejectsNegativeCapacity(t *testing.T) {
	t.Parallel()
	if _, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: -1}); err == nil {
		t.Fatal("NewMemory accepted a negative MaxEntries")
	}
}

func TestMemoryEvictsLazily(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c, err := replay.NewMemory(replay.MemoryConfig{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := c.Use(context.Background(), fmt.Sprint(i), clk.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 100 {
		t.Fatalf("Len = %d, want 100", c.Len())
	}
	clk.Advance(time.Second)
	if err := c.Use(context.Background(), "x", clk.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 1 {
		t.Fatalf("Len after expiry = %d, want 1", c.Len())
	}
}

func TestMemoryConcurrentUseAcceptsEachKeyOnce(t *testing.T) {
	t.Parallel()
	c, err := replay.NewMemory(replay.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const workers, keys = 8, 200
	var accepted atomic.Int64
	var wg sync.WaitGroup
	until := time.Now().Add(time.Hour)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				err := c.Use(context.Background(), fmt.Sprint(k), until)
				switch {
				case err == nil:
					accepted.Add(1)
				case !errors.Is(err, replay.ErrReplayed):
					t.Errorf("Use: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != keys {
		t.Fatalf("accepted %d uses, want exactly %d", accepted.Load(), keys)
	}
}
