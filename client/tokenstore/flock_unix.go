//go:build unix

package tokenstore

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often a blocked lock is retried; non-blocking attempts
// let the wait honour ctx.
const lockPoll = 5 * time.Millisecond

// flock takes an advisory lock on file, waiting until it is free or ctx
// is done.
func flock(ctx context.Context, file *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd := int(file.Fd())
	for {
		err := syscall.Flock(fd, how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func funlock(file *os.File) error {
	return syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
}
