//go:build unix

package dpop

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time of the whole process (all threads, so
// garbage collection is included): benchmarks report it per operation as
// "cpu-ns/op", which on a shared machine is far steadier than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
