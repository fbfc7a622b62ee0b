package loadgen

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// KindStats are the outcomes of one kind of request.
type KindStats struct {
	// Requests is how many were answered (or failed in transport).
	Requests int64
	// Statuses counts the answers by HTTP status (0: transport error).
	Statuses map[int]int64
	// WronglyAllowed counts 2xx answers to requests that wanted a refusal.
	WronglyAllowed int64
	// WronglyRefused counts other answers that differ from WantStatus.
	WronglyRefused int64
}

// Report is the outcome of a Run.
type Report struct {
	Requests    int64
	Elapsed     time.Duration
	Concurrency int
	// Throughput is requests per second.
	Throughput float64
	// Latency percentiles over all requests.
	P50, P90, P99, Max time.Duration
	// ByKind maps Request.Kind to its outcomes.
	ByKind map[string]*KindStats
	// TransportErrors counts requests that got no HTTP answer.
	TransportErrors int64
	// WronglyAllowed and WronglyRefused sum those of every kind.
	WronglyAllowed, WronglyRefused int64
	// Memory is what the sampler saw during the run.
	Memory MemStats
}

// Wrong is the number of requests answered otherwise than expected.
func (r *Report) Wrong() int64 { return r.WronglyAllowed + r.WronglyRefused }

type workerStats struct {
	samples []time.Duration
	seen    int64
	kinds   map[string]*KindStats
	errs    int64
}

func newWorkerStats() *workerStats {
	return &workerStats{samples: make([]time.Duration, 0, 1024), kinds: map[string]*KindStats{}}
}

func (s *workerStats) record(r Request, status int, err error, d time.Duration) {
	s.seen++
	if len(s.samples) < maxSamples {
		s.samples = append(s.samples, d)
	} else if s.seen%2 == 0 {
		s.samples[int(s.seen/2)%maxSamples] = d
	}
	k := kindStats(s.kinds, r.Kind)
	k.Requests++
	if err != nil {
		s.errs++
		k.Statuses[0]++
		return
	}
	k.Statuses[status]++
	switch {
	case status == r.WantStatus:
	case status/100 == 2:
		k.WronglyAllowed++
	default:
		k.WronglyRefused++
	}
}

// kindStats returns the stats of kind in m, added if missing.
func kindStats(m map[string]*KindStats, kind string) *KindStats {
	if m[kind] == nil {
		m[kind] = &KindStats{Statuses: map[int]int64{}}
	}
	return m[kind]
}

func buildReport(ws []*workerStats, elapsed time.Duration, conc int, mem MemStats) *Report {
	r := &Report{Elapsed: elapsed, Concurrency: conc, ByKind: map[string]*KindStats{}, Memory: mem}
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.samples...)
		r.TransportErrors += w.errs
		for name, k := range w.kinds {
			t := kindStats(r.ByKind, name)
			t.Requests += k.Requests
			t.WronglyAllowed += k.WronglyAllowed
			t.WronglyRefused += k.WronglyRefused
			for s, n := range k.Statuses {
				t.Statuses[s] += n
			}
			r.Requests += k.Requests
			r.WronglyAllowed += k.WronglyAllowed
			r.WronglyRefused += k.WronglyRefused
		}
	}
	if elapsed > 0 {
		r.Throughput = float64(r.Requests) / elapsed.Seconds()
	}
	slices.Sort(all)
	r.P50, r.P90, r.P99 = Percentile(all, 50), Percentile(all, 90), Percentile(all, 99)
	if len(all) > 0 {
		r.Max = all[len(all)-1]
	}
	return r
}

// Percentile is the nearest-rank p-th percentile of sorted, 0 for none.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// WriteText prints the report as a few lines of text.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "requests %d in %v at concurrency %d: %.0f req/s\n", r.Requests, r.Elapsed.Round(time.Millisecond), r.Concurrency, r.Throughput)
	fmt.Fprintf(w, "latency p50 %v  p90 %v  p99 %v  max %v\n", r.P50, r.P90, r.P99, r.Max)
	fmt.Fprintf(w, "wrongly allowed %d, wrongly refused %d, transport errors %d\n", r.WronglyAllowed, r.WronglyRefused, r.TransportErrors)
	fmt.Fprintf(w, "memory: heap in use peak %.1f MiB, RSS peak %.1f MiB, GC cycles %d\n",
		mib(r.Memory.PeakHeapInuse), mib(r.Memory.PeakRSS), r.Memory.NumGC)
	for _, n := range slices.Sorted(maps.Keys(r.ByKind)) {
		k := r.ByKind[n]
		fmt.Fprintf(w, "  %-14s %8d ", n, k.Requests)
		for _, c := range slices.Sorted(maps.Keys(k.Statuses)) {
			fmt.Fprintf(w, " %d×%d", c, k.Statuses[c])
		}
		if k.WronglyAllowed+k.WronglyRefused > 0 {
			fmt.Fprintf(w, "  WRONG %d", k.WronglyAllowed+k.WronglyRefused)
		}
		fmt.Fprintln(w)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
