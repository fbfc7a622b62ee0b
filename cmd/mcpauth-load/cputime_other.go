//go:build !unix

package main

import (
	"errors"
	"time"
)

// threadCPUTime is not available outside Unix.
func threadCPUTime() (time.Duration, error) {
	return 0, errors.New("thread CPU time: not supported on this system")
}
