package main

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU runs f on one locked OS thread and returns the CPU time
// (user and system) that thread spent in it.
func threadCPU(f func()) (time.Duration, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &before) != nil {
		return 0, false
	}
	f()
	if unix.Getrusage(unix.RUSAGE_THREAD, &after) != nil {
		return 0, false
	}
	used := func(r *unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return used(&after) - used(&before), true
}
