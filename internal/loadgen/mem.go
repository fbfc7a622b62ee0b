package loadgen

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// MemStats is the memory the process used during a run.
type MemStats struct {
	// PeakHeapInuse is the largest runtime.MemStats.HeapInuse sampled.
	PeakHeapInuse uint64
	// PeakRSS is the largest resident set size sampled (from
	// /proc/self/status; 0 where that file does not exist).
	PeakRSS uint64
	// Sys is runtime.MemStats.Sys at the end.
	Sys uint64
	// NumGC is the number of GC cycles during the run.
	NumGC uint32
}

type memSampler struct {
	done  chan struct{}
	stats chan MemStats
}

// startMemSampler samples memory every 100 ms until ctx ends or stop is
// called.
func startMemSampler(ctx context.Context) *memSampler {
	s := &memSampler{done: make(chan struct{}), stats: make(chan MemStats, 1)}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	go func() {
		var out MemStats
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		sample := func() {
			runtime.ReadMemStats(&ms)
			out.PeakHeapInuse = max(out.PeakHeapInuse, ms.HeapInuse)
			out.PeakRSS = max(out.PeakRSS, readRSS())
			out.Sys, out.NumGC = ms.Sys, ms.NumGC-gc0
		}
		for {
			sample()
			select {
			case <-tick.C:
				continue
			case <-ctx.Done():
				<-s.done
			case <-s.done:
			}
			sample()
			s.stats <- out
			return
		}
	}()
	return s
}

func (s *memSampler) stop() MemStats {
	close(s.done)
	return <-s.stats
}

// readRSS returns VmRSS of this process in bytes, or 0.
func readRSS() uint64 {
	rss, _ := procStatusBytes("self", "VmRSS")
	return rss
}

// procStatusBytes reads a memory field ("VmRSS", "VmHWM") of
// /proc/PID/status in bytes; it fails where /proc does not exist.
func procStatusBytes(pid, field string) (uint64, error) {
	path := "/proc/" + pid + "/status"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("%w: no %s in %s", ErrProtect, field, path)
}
