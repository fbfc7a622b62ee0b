package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// JSON marshals v with indentation and compares it with testdata/name.
func JSON(t testing.TB, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("golden: marshal %s: %v", name, err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name)
	if *update {
		write(t, path, got)
		return
	}
	want := read(t, path)
	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("golden: %s: %v", name, err)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatalf("golden: %s is not JSON: %v", path, err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("golden: %s differs (run with -update to accept)\n got: %s\nwant: %s", path, got, want)
	}
}

// Text compares got with testdata/name byte for byte.
func Text(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		write(t, path, []byte(got))
		return
	}
	want := read(t, path)
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("golden: %s differs (run with -update to accept)\n got: %q\nwant: %q", path, got, want)
	}
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (run with -update to create it)", err)
	}
	return b
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
