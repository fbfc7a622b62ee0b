//go:build unix && !linux

package testdb

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
