//go:build !(linux || darwin || freebsd || openbsd || dragonfly || solaris)

package main

import (
	"errors"
	"time"
)

// threadCPUTime is not available on this system.
func threadCPUTime() (time.Duration, error) {
	return 0, errors.New("thread CPU time: not supported on this system")
}
