package clock

import (
	"testing"
	"time"
)

func TestFuncNow(t *testing.T) {
	at := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	if got := Func(func() time.Time { return at }).Now(); !got.Equal(at) {
		t.Fatalf("a fixed clock read %v, want %v", got, at)
	}
	var nilClock Func
	before := time.Now()
	got := nilClock.Now()
	if got.Before(before) || got.After(time.Now()) {
		t.Fatalf("nil Func read %v, want the system clock", got)
	}
}
