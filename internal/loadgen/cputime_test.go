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
