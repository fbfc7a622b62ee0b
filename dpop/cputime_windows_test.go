package dpop

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time of the whole process (kernel and user
// time of all threads); see the Unix version.
func processCPU() time.Duration {
	self, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(self, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	// A Filetime counts 100 ns intervals.
	ticks := func(ft syscall.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
