package testdb

import "syscall"

// setParentDeathSignal kills the server if the test binary dies first.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
