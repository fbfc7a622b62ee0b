//go:build !windows

package main

import (
	"io"
	"os"
)

// openTerminal opens the controlling terminal, where the bridge asks the
// user (its stdin and stdout belong to the host); nil when there is none.
func openTerminal() io.ReadWriteCloser {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
}
