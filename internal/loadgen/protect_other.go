//go:build !linux

package loadgen

import "os/exec"

// setParentDeathSignal does nothing outside Linux.
func setParentDeathSignal(*exec.Cmd) {}
