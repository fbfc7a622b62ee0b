//go:build unix

package testdb

import (
	"os"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
)

// account is the user a server runs as when the tests run as root.
type account struct{ uid, gid uint32 }

// serverAccount returns nil when the tests do not run as root, else the
// "postgres" system user (PostgreSQL refuses to run as root).
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &account{uid: uint32(uid), gid: uint32(gid)}, nil
}

// chown gives path to a; a nil account leaves it alone.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
}

// sysProcAttr puts the server in its own process group, ends it with the
// test process on Linux, and runs it as owner when not nil.
func sysProcAttr(owner *account) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if owner != nil {
		attr.Credential = &syscall.Credential{Uid: owner.uid, Gid: owner.gid}
	}
	if runtime.GOOS == "linux" {
		setParentDeathSignal(attr)
	}
	return attr
}

// killGroup kills every process in the group led by pid.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
