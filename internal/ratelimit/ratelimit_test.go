package ratelimit

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// TestDecide: GCRA lets a burst through at once, then one request per
// interval, and tells how long to wait.
func TestDecide(t *testing.T) {
	tab := New[string](Rate{PerSecond: 2, Burst: 3}, 10)
	for i := range 3 {
		if ok, _ := tab.Allow("k", t0); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, wait := tab.Allow("k", t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %v; want refused, 500ms", ok, wait)
	}
	if ok, _ := tab.Allow("k", t0.Add(499*time.Millisecond)); ok {
		t.Fatal("allowed before the interval passed")
	}
	if ok, _ := tab.Allow("k", t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("refused after the interval")
	}
	if ok, _ := tab.Allow("other", t0); !ok {
		t.Fatal("another key shares the bucket")
	}
	inf := New[string](Rate{PerSecond: math.Inf(1), Burst: 1}, 1)
	for range 100 {
		if ok, _ := inf.Allow("k", t0); !ok {
			t.Fatal("an unlimited rate refused a request")
		}
	}
}

// TestShardedBound: a large table is sharded and never holds more than its
// bound, however many keys pass through it.
func TestShardedBound(t *testing.T) {
	for _, bound := range []int{1, 1000, 5000, 40_000} {
		tab := New[string](Rate{PerSecond: 1, Burst: 1}, bound)
		for i := range 3 * bound {
			tab.Allow(fmt.Sprint("key", i), t0)
		}
		if n := tab.Len(); n > bound || n < bound*9/10 {
			t.Fatalf("bound %d (%d shards): %d entries", bound, len(tab.shards), n)
		}
	}
}

func TestPeekSpendsNothing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tb := New[string](Rate{PerSecond: 1, Burst: 2}, 10)
	for i := range 5 {
		if !tb.Peek("a", now) {
			t.Fatalf("peek %d refused a fresh key", i)
		}
	}
	for i := range 2 {
		if ok, _ := tb.Allow("a", now); !ok {
			t.Fatalf("allow %d refused within the burst", i)
		}
	}
	if tb.Peek("a", now) {
		t.Fatal("peek allows past the burst")
	}
	if !tb.Peek("a", now.Add(time.Second)) {
		t.Fatal("peek refuses after a refill")
	}
	if !New[string](Rate{PerSecond: math.Inf(1)}, 1).Peek("x", now) {
		t.Fatal("an unlimited table refuses")
	}
}
