package loadgen

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPUTime returns the processor time (user and system) that the
// process pid used so far, from /proc/PID/stat in clock ticks of 10 ms;
// it fails where /proc does not exist or the process is gone.
func ProcessCPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("loadgen: unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("loadgen: short /proc/%d/stat", pid)
	}
	// Fields 14 and 15 (utime, stime) are the 12th and 13th after ")".
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// ProcessSyscalls returns how many read and write system calls (read,
// write, recv, send and their kind) the process pid made so far, from
// /proc/PID/io.
func ProcessSyscalls(pid int) (reads, writes uint64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, err
	}
	var seen int
	for line := range strings.Lines(string(data)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "syscr":
			dst = &reads
		case "syscw":
			dst = &writes
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(value, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("loadgen: /proc/%d/io: %w", pid, err)
		}
		seen++
	}
	if seen != 2 {
		return 0, 0, fmt.Errorf("loadgen: /proc/%d/io lacks syscr or syscw", pid)
	}
	return reads, writes, nil
}
