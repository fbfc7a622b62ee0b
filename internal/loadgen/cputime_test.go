package loadgen

import (
	"os"
	"runtime"
	"testing"
)

func TestProcessCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	for _, tc := range []struct {
		name    string
		pid     int
		wantErr bool
	}{
		{"this process", os.Getpid(), false},
		{"no such process", 1 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ProcessCPUTime(tc.pid)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ProcessCPUTime(%d) = %v, %v; want error %v", tc.pid, d, err, tc.wantErr)
			}
			if err == nil && d < 0 {
				t.Errorf("ProcessCPUTime(%d) = %v, want at least 0", tc.pid, d)
			}
		})
	}
}

// TestProcessSyscalls: a write through the file system is counted.
func TestProcessSyscalls(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	_, w0, err := ProcessSyscalls(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(t.TempDir() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if _, w1, err := ProcessSyscalls(os.Getpid()); err != nil || w1 < w0+3 {
		t.Errorf("writes %d then %d, %v; want at least 3 more", w0, w1, err)
	}
	if _, _, err := ProcessSyscalls(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
