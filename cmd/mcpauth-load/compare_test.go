package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCompareTargets: the targets pass or miss by the medians of
// per-round ratios, the CPU-per-request ratio and the fresh-token budget
// (bare's CPU per request + one ES256 verification + the slack, the
// verification counted as the signature, as go-jose's whole check, and as
// the sdk peer pays it in the same run).
func TestCompareTargets(t *testing.T) {
	t.Parallel()
	names := []string{"bare", "sdk", "protect", "protect+policy", "protect+dpop"}
	// result: protect's repeated throughput ratio, its repeated CPU per
	// request and its fresh CPU per request (bare: 100 µs, 1000 requests
	// per round, 3 rounds); ES256 verification 50 µs.
	result := func(ratio float64, repeatedCPU, freshCPU time.Duration) *compareResult {
		r := &compareResult{names: names, workloads: []workload{{"repeated", false}, {"fresh", true}},
			tput: map[string][]float64{}, cpu: map[string]time.Duration{}, self: map[string]time.Duration{}, requests: map[string]int64{},
			verify: verifyCost{sig: 50 * time.Microsecond, jose: 60 * time.Microsecond}}
		for _, wl := range r.workloads {
			for _, n := range names {
				key := wl.name + "/" + n
				r.tput[key] = []float64{1000, 1000, 1000}
				r.requests[key] = 3000
				r.cpu[key] = 3000 * 100 * time.Microsecond
				r.self[key] = 3000 * 400 * time.Microsecond
			}
		}
		r.tput["repeated/protect"] = []float64{1000 * ratio, 1000 * ratio, 1000 * ratio}
		r.tput["fresh/protect"] = []float64{1100, 1100, 1100} // ×1.1 the sdk peer
		r.cpu["repeated/protect"] = 3000 * repeatedCPU
		r.cpu["fresh/protect"] = 3000 * freshCPU
		r.cpu["fresh/sdk"] = 3000 * 150 * time.Microsecond // its verification: 50 µs over bare
		return r
	}
	for _, c := range []struct {
		name string
		r    *compareResult
		want []string
	}{
		{"all met", result(0.97, 108*time.Microsecond, 164*time.Microsecond), []string{
			"repeated token: protect / bare, throughput                         x0.970 >= 0.95  pass",
			"repeated token: protect / bare, CPU per request                    x1.080 <= 1.10  pass",
			"fresh token: protect / sdk, throughput                             x1.100 >= 1.05  pass",
			"164.0 µs <= 165.0 µs (bare 100.0 + ES256 50.0 + 15)  pass",
			"signature 50.0 µs",
			"repeated  bare 400.0  sdk 400.0  protect 400.0",
			"164.0 µs <= 175.0 µs (bare 100.0 + go-jose 60.0 + 15)  pass",
			"164.0 µs <= 165.0 µs (bare 100.0 + sdk's verification 50.0 + 15)  pass",
		}},
		{"all missed", result(0.90, 115*time.Microsecond, 166*time.Microsecond), []string{
			"x0.900 >= 0.95  MISS",
			"x1.150 <= 1.10  MISS",
			"166.0 µs <= 165.0 µs (bare 100.0 + ES256 50.0 + 15)  MISS",
			"166.0 µs <= 175.0 µs (bare 100.0 + go-jose 60.0 + 15)  pass",
			"166.0 µs <= 165.0 µs (bare 100.0 + sdk's verification 50.0 + 15)  MISS",
		}},
	} {
		var b bytes.Buffer
		c.r.write(&b, nil, false)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, b.String())
			}
		}
		if strings.Contains(b.String(), "jose /") || strings.Contains(b.String(), "jose's check") {
			t.Errorf("%s: jose figures without the jose peer:\n%s", c.name, b.String())
		}
	}
	// With the jose peer: its ratios, and the budget with its check as the
	// verification term (130 µs against bare's 100).
	r := result(0.97, 108*time.Microsecond, 164*time.Microsecond)
	r.names = append(r.names, josePeer)
	for _, wl := range r.workloads {
		key := wl.name + "/" + josePeer
		r.tput[key] = []float64{1020, 1020, 1020}
		r.requests[key] = 3000
		r.cpu[key] = 3000 * 130 * time.Microsecond
	}
	var b bytes.Buffer
	r.write(&b, nil, false)
	for _, w := range []string{
		"fresh token: jose / sdk (the bound for any go-jose verifier)",
		"x1.020 [1.020–1.020]",
		"164.0 µs <= 145.0 µs (bare 100.0 + jose's check 30.0 + 15)  MISS",
	} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("with jose: output lacks %q:\n%s", w, b.String())
		}
	}
}
