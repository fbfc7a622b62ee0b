package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/authserver/storagetest"
)

// Compile-time checks of the optional interfaces, which the conformance
// checks skip for a store without them.
var (
	_ authserver.RefreshTokenUser = (*boltstore.Store)(nil)
	_ authserver.Sweeper          = (*boltstore.Store)(nil)
)

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestStorage runs the storage conformance checks on bbolt, each group in
// a new file.
func TestStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) authserver.Storage {
		return open(t, filepath.Join(t.TempDir(), "s.db")).Storage()
	})
}

// TestFileMode: the file, which holds the private signing keys, is
// readable by its owner only.
func TestFileMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "authserver.db")
	open(t, path)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("data file: %v %v", fi, err)
	}
}

// TestLocked: a second process (or store) cannot open a file that is
// open; it fails instead of hanging.
func TestLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "authserver.db")
	open(t, path)
	if st, err := boltstore.Open(path); err == nil {
		_ = st.Close()
		t.Fatal("second open of a locked data file succeeded")
	}
}
