package main

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/client/tokenstore"
)

// TestTokenStoreFlag: file is the file; auto falls back to it, saying so
// on stderr, when the keychain does not answer (no D-Bus session here:
// DBUS_SESSION_BUS_ADDRESS points nowhere); keychain then fails; an
// unknown kind is refused.
func TestTokenStoreFlag(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Secret Service is what D-Bus reaches on Linux only")
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	path := filepath.Join(t.TempDir(), "tokens.json")
	var stderr strings.Builder
	s, err := openStore(t.Context(), "file", path, &stderr)
	if _, ok := s.(*tokenstore.File); err != nil || !ok {
		t.Fatalf("file: %T %v", s, err)
	}
	s, err = openStore(t.Context(), "auto", path, &stderr)
	if _, ok := s.(*tokenstore.File); err != nil || !ok || !strings.Contains(stderr.String(), "keeping tokens in "+path) {
		t.Fatalf("auto without a keychain: %T %v %q", s, err, stderr.String())
	}
	if _, err := openStore(t.Context(), "keychain", path, &stderr); err == nil {
		t.Fatal("keychain without a keychain: no error")
	}
	if _, err := openStore(t.Context(), "vault", path, &stderr); err == nil {
		t.Fatal("unknown kind accepted")
	}
}
