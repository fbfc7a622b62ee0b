//go:build !windows

package tokenstore

import (
	"os"
	"path/filepath"
	"testing"
)

// checkPrivatePath fails t unless path has mode 0600 (0700 for a
// directory).
func checkPrivatePath(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := os.FileMode(0o600)
	if fi.IsDir() {
		want = 0o700
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
	}
}

// exposeToOthers lets every user read path.
func exposeToOthers(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
}
