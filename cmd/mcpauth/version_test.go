package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: one line naming mcpauth, a version and the toolchain.
func TestVersion(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "mcpauth ") || !strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
		t.Fatalf("output %q", out)
	}
	if code := run(context.Background(), []string{"version", "extra"}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d for an argument", code)
	}
}
