package testdb

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// missing skips the test, or fails it under CI, because a server binary
// is not installed.
func missing(t testing.TB, what, pkg string) {
	t.Helper()
	msg := what + " not found; install the Debian package " + pkg + " (make test does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must not skip this test")
	}
	t.Skip(msg)
}

// postgresBin returns the directory holding initdb and postgres, or "".
func postgresBin() string {
	if d := os.Getenv("MCPAUTH_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(dirs) // newest version first (the glob is sorted)
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "postgres")) && isExecutable(filepath.Join(d, "initdb")) {
			return d
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if d := filepath.Dir(p); isExecutable(filepath.Join(d, "initdb")) {
			return d
		}
	}
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
