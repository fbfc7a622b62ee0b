//go:build e2e && linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// peakRSSKiB is the peak resident set (VmHWM) of the running process pid,
// in KiB. It is read from /proc while the process runs, not from the
// rusage of the exited process: Go starts a child with vfork, and Linux
// carries the high-water mark of the address space a process had before
// execve into its rusage, so ru_maxrss would report the test binary's own
// peak, not the bridge's.
func peakRSSKiB(pid int) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
