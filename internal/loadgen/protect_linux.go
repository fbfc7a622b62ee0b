package loadgen

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel send the child SIGKILL if this
// process dies without stopping it (no orphaned proxy after a crash).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
