package main

import (
	"testing"
	"time"
)

func TestCostLine(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		grants   int64
		costs    []roundCost
		database bool
		want     string
	}{
		{"memory", 1000, []roundCost{{cpu: 100 * ms, dbCPU: -1, walSyncs: -1}, {cpu: 150 * ms, dbCPU: -1, walSyncs: -1}}, false,
			"cpu per grant: this process 250µs"},
		{"postgres", 1000, []roundCost{{cpu: 200 * ms, dbCPU: 50 * ms, walSyncs: 100}, {cpu: 100 * ms, dbCPU: 40 * ms, walSyncs: 150}}, true,
			"cpu per grant: this process 300µs, database server 90µs; WAL flushes: 250, 4.00 grants per flush"},
		{"database processes unreadable in one round", 1000, []roundCost{{cpu: 200 * ms, dbCPU: -1, walSyncs: 100}, {cpu: 100 * ms, dbCPU: 40 * ms, walSyncs: 150}}, true,
			"cpu per grant: this process 300µs, database server -; WAL flushes: 250, 4.00 grants per flush"},
		{"no WAL statistics", 1000, []roundCost{{cpu: 200 * ms, dbCPU: 50 * ms, walSyncs: -1}}, true,
			"cpu per grant: this process 200µs, database server 50µs; WAL flushes: -"},
		{"no grants", 0, []roundCost{{cpu: 200 * ms}}, true, "cost: no grants"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := costLine(tc.grants, tc.costs, tc.database); got != tc.want {
				t.Errorf("costLine = %q\nwant       %q", got, tc.want)
			}
		})
	}
}

func TestCostSince(t *testing.T) {
	ms := time.Millisecond
	s0 := costSample{cpu: 10 * ms, walSyncs: 5, dbCPU: map[int]time.Duration{1: 10 * ms, 2: 20 * ms, 3: 5 * ms}}
	// Process 3 ended during the round (its time is lost), 4 started.
	s1 := costSample{cpu: 30 * ms, walSyncs: 9, dbCPU: map[int]time.Duration{1: 15 * ms, 2: 21 * ms, 4: 2 * ms}}
	if got, want := s1.since(s0), (roundCost{cpu: 20 * ms, dbCPU: 8 * ms, walSyncs: 4}); got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
	// A sample that could not read the server leaves its figures missing.
	if got, want := (costSample{cpu: 30 * ms, walSyncs: -1}).since(s0), (roundCost{cpu: 20 * ms, dbCPU: -1, walSyncs: -1}); got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
}
