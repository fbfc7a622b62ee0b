package resource

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

func testValue(token string, claims int) *authValue {
	av := newAuthValue(token)
	av.info.Claims = make([]byte, claims)
	return av
}

func TestTokenCacheExpiry(t *testing.T) {
	t.Parallel()
	c, _ := newTokenCache(CacheConfig{MaxAge: time.Minute})
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	c.put(testValue("short", 0), t0.Add(10*time.Second), t0) // exp first
	c.put(testValue("long", 0), t0.Add(time.Hour), t0)       // max age first
	c.put(testValue("expired", 0), t0.Add(-time.Second), t0) // never stored
	tests := []struct {
		token string
		at    time.Duration
		hit   bool
	}{
		{"short", 9 * time.Second, true},
		{"short", 10 * time.Second, false},
		{"long", 59 * time.Second, true},
		{"long", 60 * time.Second, false},
		{"expired", 0, false},
		{"unknown", 0, false},
		{"shor", 0, false},
	}
	for _, tt := range tests {
		if got := c.get(tt.token, t0.Add(tt.at)) != nil; got != tt.hit {
			t.Errorf("get(%q) at +%s = %v, want %v", tt.token, tt.at, got, tt.hit)
		}
	}
}

func TestTokenCacheBounds(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	c, _ := newTokenCache(CacheConfig{MaxEntries: 160, MaxBytes: 1 << 30})
	for i := 0; i < 10000; i++ {
		c.put(testValue("token-"+strconv.Itoa(i), 10), t0.Add(time.Hour), t0)
	}
	if n := c.len(); n > 160 || n < 100 {
		t.Errorf("entries = %d, want about 160", n)
	}
	if c.get("token-9999", t0) == nil {
		t.Error("the newest entry was evicted")
	}
	if c.get("token-0", t0) != nil {
		t.Error("the oldest entry survived")
	}
	for i := range c.shards {
		if q := len(c.shards[i].queue); q > 4*c.shards[i].maxEntries+64 {
			t.Errorf("shard %d queue grew to %d", i, q)
		}
	}
	b, _ := newTokenCache(CacheConfig{MaxEntries: 1 << 20, MaxBytes: 16 * (entryOverhead + 1000 + 10)})
	for i := 0; i < 1000; i++ {
		b.put(testValue("token-"+strconv.Itoa(i)+string(make([]byte, 1000)), 10), t0.Add(time.Hour), t0)
	}
	if n := b.len(); n > 32 {
		t.Errorf("byte bound ignored: %d entries", n)
	}
}

// TestTokenCacheReplace: re-verifying a token replaces its entry without
// growing the queue without bound.
func TestTokenCacheReplace(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	c, _ := newTokenCache(CacheConfig{MaxAge: time.Second})
	now := t0
	for i := 0; i < 5000; i++ {
		c.put(testValue("same", 0), now.Add(time.Hour), now)
		now = now.Add(2 * time.Second)
	}
	total := 0
	for i := range c.shards {
		total += len(c.shards[i].queue) - c.shards[i].head
	}
	if total > 70 || c.len() != 1 {
		t.Errorf("queue %d entries, map %d", total, c.len())
	}
}

func TestTokenCacheDisabled(t *testing.T) {
	t.Parallel()
	c, err := newTokenCache(CacheConfig{Disabled: true})
	if err != nil || c != nil {
		t.Fatal(c, err)
	}
	c.put(testValue("x", 0), time.Now().Add(time.Hour), time.Now())
	if c.get("x", time.Now()) != nil {
		t.Error("disabled cache hit")
	}
}

func TestTokenCacheConcurrent(t *testing.T) {
	t.Parallel()
	c, _ := newTokenCache(CacheConfig{MaxEntries: 500})
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				tok := "t" + strconv.Itoa((g*7919+i)%1500)
				if v := c.get(tok, t0); v == nil {
					c.put(testValue(tok, 1), t0.Add(time.Hour), t0)
				}
			}
		}()
	}
	wg.Wait()
	if c.len() > 512 {
		t.Errorf("entries %d", c.len())
	}
}

func TestEqualConstantTime(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		eq   bool
	}{{"", "", true}, {"a", "a", true}, {"a", "b", false}, {"ab", "a", false}, {"abc", "abd", false}} {
		if equalConstantTime(tt.a, tt.b) != tt.eq {
			t.Errorf("%q %q", tt.a, tt.b)
		}
	}
}

// TestTokenCacheDecodedClaims: decoding a cached token's claims for go-sdk
// counts in its entry's size, so the byte bound still holds; a value no
// longer (or never) cached is not counted.
func TestTokenCacheDecodedClaims(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v := &Verifier{clock: func() time.Time { return t0 }}
	claims := []byte(`{"sub":"alice","aud":["a","b"],"cnf":{"jkt":"x"}}`)
	c, _ := newTokenCache(CacheConfig{MaxBytes: 1 << 20})
	av := testValue("cached", 0)
	av.info.Claims = claims
	c.put(av, t0.Add(time.Hour), t0)
	s := c.shard(av.key)
	before, size := s.bytes, av.size
	m := av.decodedClaims(v.clock.Now())
	if m["sub"] != "alice" || av.decodedClaims(v.clock.Now())["sub"] != "alice" {
		t.Fatalf("decoded %v", m)
	}
	grown := int64(decodedClaimsFactor*len(claims) + decodedClaimsOverhead)
	if s.bytes != before+grown || av.size != size+grown {
		t.Errorf("shard bytes %d -> %d, entry %d -> %d; want +%d once", before, s.bytes, size, av.size, grown)
	}
	loose := testValue("never cached", 0)
	loose.info.Claims = claims
	if loose.decodedClaims(v.clock.Now())["sub"] != "alice" || s.bytes != before+grown {
		t.Error("an uncached value changed the cache's size")
	}
	// A copy shares nothing mutable with the decoded claims.
	cp := cloneJSON(m).(map[string]any)
	cp["aud"].([]any)[0] = "changed"
	cp["cnf"].(map[string]any)["jkt"] = "changed"
	if m["aud"].([]any)[0] != "a" || m["cnf"].(map[string]any)["jkt"] != "x" {
		t.Errorf("cloneJSON shared storage: %v", m)
	}
}
