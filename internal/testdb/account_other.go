//go:build !unix

package testdb

import (
	"errors"
	"syscall"
)

type account struct{}

func serverAccount() (*account, error) { return nil, errors.New("testdb needs a Unix system") }

func (*account) chown(string) error { return nil }

func sysProcAttr(*account) *syscall.SysProcAttr { return nil }

func killGroup(int) {}
