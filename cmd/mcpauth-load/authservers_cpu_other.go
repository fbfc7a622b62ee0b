//go:build !linux

package main

import "time"

// threadCPU runs f and returns its wall time where thread CPU time is not
// available.
func threadCPU(f func()) (time.Duration, bool) {
	start := time.Now()
	f()
	return time.Since(start), true
}
