//go:build readme

package readmecheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEGoBlocksCompile builds every Go block of the module's
// README.md against the module's current code.
func TestREADMEGoBlocksCompile(t *testing.T) {
	root := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Extract(string(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block: is the extraction broken?")
	}
	if out, err := build(t, root, blocks); err != nil {
		t.Fatalf("README.md Go blocks do not compile (positions are README.md lines; skip a block on purpose with %s):\n%s", SkipMarker, out)
	}
	t.Logf("%d Go blocks of README.md compile", len(blocks))
}

// TestBrokenBlockFails: the check is not vacuous. A block calling a
// function that does not exist fails the build, and the error names the
// Markdown line of the mistake; a skipped broken block does not.
func TestBrokenBlockFails(t *testing.T) {
	root := moduleRoot(t)
	md := "# doc\n\n```go\nc, err := client.New(client.Config{})\n```\n\ntext\n\n```go\nv := resource.NoSuchFunction()\n```\n\n" +
		SkipMarker + "\n```go\nthis is not Go\n```\n"
	blocks, err := Extract(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2 (the skipped one left out)", len(blocks))
	}
	out, err := build(t, root, blocks)
	if err == nil {
		t.Fatal("a block calling resource.NoSuchFunction compiled")
	}
	if !regexp.MustCompile(`README\.md:10:\d+: undefined: resource\.NoSuchFunction`).Match(out) {
		t.Fatalf("error does not point at README.md:10:\n%s", out)
	}
	if bytes.Contains(out, []byte(":4:")) {
		t.Errorf("the correct block at line 4 was reported:\n%s", out)
	}
}

// build compiles blocks in a temporary module that a go.work file joins to
// the module at root, and returns the go tool's output.
func build(t *testing.T, root string, blocks []Block) ([]byte, error) {
	t.Helper()
	files, err := Generate("readmeblocks", "README.md", blocks)
	if err != nil {
		t.Fatal(err)
	}
	prelude, err := os.ReadFile(filepath.Join("testdata", "prelude.go"))
	if err != nil {
		t.Fatal(err)
	}
	files["prelude.go"] = prelude
	files["go.mod"] = []byte("module readmeblocks\n\ngo 1.26.0\n")
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "readmeblocks")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	work := "go 1.26.0\n\nuse (\n\t./readmeblocks\n\t" + strings.ReplaceAll(root, `\`, `/`) + "\n)\n"
	if err := os.WriteFile(filepath.Join(tmp, "go.work"), []byte(work), 0o600); err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, args := range [][]string{{"build", "."}, {"vet", "."}} {
		cmd := exec.Command(goTool(t), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(tmp, "go.work"), "GOFLAGS=-mod=readonly")
		out, err = cmd.CombinedOutput()
		if err != nil {
			t.Logf("generated blocks.go:\n%s", files["blocks.go"])
			return out, err
		}
	}
	return out, nil
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func goTool(t *testing.T) string {
	t.Helper()
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
