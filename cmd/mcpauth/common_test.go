package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseFileBound: a file a flag names is read up to maxFlagFile bytes;
// a larger one is refused without being read whole or parsed.
func TestParseFileBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parsed := 0
	parse := func(b []byte) (int, error) { parsed++; return len(b), nil }
	at := filepath.Join(dir, "at")
	if err := os.WriteFile(at, make([]byte, maxFlagFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := parseFile("--policy", at, parse); err != nil || n != maxFlagFile {
		t.Fatalf("a file of the limit: %d, %v", n, err)
	}
	over := filepath.Join(dir, "over")
	if err := os.WriteFile(over, make([]byte, maxFlagFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFile("--policy", over, parse); err == nil || !strings.Contains(err.Error(), "--policy") || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a file over the limit: %v", err)
	}
	if parsed != 1 {
		t.Errorf("parsed %d times, want 1", parsed)
	}
	if _, err := parseFile("--policy", filepath.Join(dir, "missing"), parse); err == nil || !strings.HasPrefix(err.Error(), "--policy: ") {
		t.Fatalf("a missing file: %v", err)
	}
}
