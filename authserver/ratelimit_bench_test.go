package authserver

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLimiterTable measures the rate limiter's table with 1 000,
// 10 000 and 100 000 tracked keys: one op is a request for a known key in
// one full table and a request for a new key in another full table (which
// evicts the least recently used key). The two run in alternating batches
// of the same iteration, so both see the same machine load; x-new/known is
// the median over batches of (time per new key) / (time per known key),
// and ns/known and ns/new are the per-request means.
func BenchmarkLimiterTable(b *testing.B) {
	for _, tracked := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("tracked=%d", tracked), func(b *testing.B) { benchLimiterTable(b, tracked) })
	}
}

func benchLimiterTable(b *testing.B, tracked int) {
	const batch = 256
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	key := func(i int) string { return "2001:db8:" + strconv.Itoa(i) + "::1" }
	known, fresh := mustLimiterSet(b, 10, 20, tracked), mustLimiterSet(b, 10, 20, tracked)
	keys := make([]string, tracked)
	for i := range keys {
		keys[i] = key(i)
		known.allow(keys[i], now)
		fresh.allow(key(tracked+i), now)
	}
	// Known keys are visited in a scattered order, so neither table is
	// walked in insertion order.
	order := make([]int, tracked)
	for i := range order {
		order[i] = (i * 7919) % tracked
	}
	newKeys := make([]string, batch)
	next := 2 * tracked
	var knownTime, newTime time.Duration
	var ratios []float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		b.StopTimer()
		for j := range n {
			newKeys[j] = key(next)
			next++
		}
		b.StartTimer()
		runKnown := func() time.Duration {
			t0 := time.Now()
			for j := range n {
				known.allow(keys[order[(i+j)%tracked]], now)
			}
			return time.Since(t0)
		}
		runNew := func() time.Duration {
			t0 := time.Now()
			for j := range n {
				fresh.allow(newKeys[j], now)
			}
			return time.Since(t0)
		}
		var k, f time.Duration
		if (i/batch)%2 == 0 {
			k, f = runKnown(), runNew()
		} else {
			f, k = runNew(), runKnown()
		}
		knownTime += k
		newTime += f
		if k > 0 {
			ratios = append(ratios, float64(f)/float64(k))
		}
	}
	b.StopTimer()
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "x-new/known")
	}
	b.ReportMetric(float64(knownTime.Nanoseconds())/float64(b.N), "ns/known")
	b.ReportMetric(float64(newTime.Nanoseconds())/float64(b.N), "ns/new")
}
