package lru

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func TestCache(t *testing.T) {
	now := t0
	var evicted []string
	c := New[string, int](2, func() time.Time { return now }, func(k string, _ int) { evicted = append(evicted, k) })

	c.Add("a", 1, time.Time{})
	c.Add("b", 2, t0.Add(time.Minute))
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %v, %v", v, ok)
	}
	c.Add("c", 3, time.Time{}) // b is least recently used
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived eviction")
	}
	if len(evicted) != 1 || evicted[0] != "b" {
		t.Fatalf("evicted = %v, want [b]", evicted)
	}
	if got := c.Keys(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("Keys = %v, want [a c] (oldest first)", got)
	}

	c.Add("d", 4, t0.Add(time.Minute))
	now = t0.Add(time.Minute)
	if _, ok := c.Get("d"); ok {
		t.Fatal("d read at its expiry")
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1 after the expired entry was read", c.Len())
	}

	if _, ok := c.Take("c", func(v int) bool { return v == 4 }); ok {
		t.Fatal("Take returned a value match refused")
	}
	if v, ok := c.Take("c", func(v int) bool { return v == 3 }); !ok || v != 3 {
		t.Fatalf("Take(c) = %v, %v", v, ok)
	}
	if _, ok := c.Take("c", nil); ok {
		t.Fatal("Take returned c twice")
	}

	calls := 0
	mk := func() int { calls++; return 9 }
	if v := c.GetOrAdd("e", mk, time.Time{}); v != 9 || calls != 1 {
		t.Fatalf("GetOrAdd new = %v (%d calls)", v, calls)
	}
	if v := c.GetOrAdd("e", mk, time.Time{}); v != 9 || calls != 1 {
		t.Fatalf("GetOrAdd existing = %v (%d calls)", v, calls)
	}
	c.Remove("e")
	if _, ok := c.Get("e"); ok {
		t.Fatal("e survived Remove")
	}
	c.Add("f", 5, time.Time{})
	c.Purge()
	// Every way out of the cache reaches onEvict (authserver closes the
	// key sets it evicts): room, expiry, Take, Remove and Purge.
	if want := []string{"b", "a", "d", "c", "e", "f"}; !slices.Equal(evicted, want) {
		t.Fatalf("evicted = %v, want %v", evicted, want)
	}
	if c.Len() != 0 {
		t.Fatalf("Len after Purge = %d", c.Len())
	}
}

func TestCacheSizeFloor(t *testing.T) {
	c := New[int, int](0, nil, nil)
	c.Add(1, 1, time.Time{})
	c.Add(2, 2, time.Time{})
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
}

// TestUpdate: Update reads the live value (zero when missing), stores what
// f returns, marks the key recently used and keeps the bound.
func TestUpdate(t *testing.T) {
	c := New[string, int](2, nil, nil)
	c.Update("a", func(old int) int { return old + 1 })
	c.Update("a", func(old int) int { return old + 1 })
	c.Add("b", 5, time.Time{})
	c.Update("a", func(old int) int { return old * 10 }) // a is now the most recent
	c.Update("c", func(old int) int { return old + 7 })  // evicts b
	if v, ok := c.Get("a"); !ok || v != 20 {
		t.Fatalf("a = %v, %v; want 20", v, ok)
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived: Update did not mark a as recently used")
	}
	if v, _ := c.Get("c"); v != 7 {
		t.Fatalf("c = %d, want 7", v)
	}
}
