package clientmeta

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestResolveCache covers requirement CIMD-06.
func TestResolveCache(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		headers   []string
		advance   time.Duration
		wantFetch int32 // fetches after two Resolve calls separated by advance
	}{
		{"CIMD-06 max-age=60 reused within 60 s", []string{"Cache-Control", "max-age=60"}, 59 * time.Second, 1},
		{"CIMD-06 max-age=60 refetched after 60 s", []string{"Cache-Control", "max-age=60"}, 61 * time.Second, 2},
		{"CIMD-06 max-age clamped to 24 h", []string{"Cache-Control", "public, max-age=31536000"}, 24*time.Hour + time.Second, 2},
		{"CIMD-06 max-age below clamp honoured", []string{"Cache-Control", "max-age=31536000"}, 23 * time.Hour, 1},
		{"CIMD-06 no-store", []string{"Cache-Control", "no-store"}, 0, 2},
		{"CIMD-06 no-cache", []string{"Cache-Control", "no-cache, max-age=600"}, 0, 2},
		{"CIMD-06 max-age=0", []string{"Cache-Control", "max-age=0"}, 0, 2},
		{"CIMD-06 Age subtracted", []string{"Cache-Control", "max-age=60", "Age", "50"}, 11 * time.Second, 2},
		{"CIMD-06 Expires", []string{"Expires", "Tue, 28 Jul 2026 12:10:00 GMT", "Date", "Tue, 28 Jul 2026 12:00:00 GMT"}, 9 * time.Minute, 1},
		{"CIMD-06 Expires passed", []string{"Expires", "Tue, 28 Jul 2026 12:10:00 GMT", "Date", "Tue, 28 Jul 2026 12:00:00 GMT"}, 11 * time.Minute, 2},
		{"CIMD-06 invalid Expires", []string{"Expires", "0"}, 0, 2},
		{"CIMD-06 no headers: default TTL", nil, DefaultTTL - time.Second, 1},
		{"CIMD-06 no headers: default TTL passed", nil, DefaultTTL, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, serveDoc(docJSON(testID), tt.headers...))
			clock := newClock()
			r, err := NewResolver(tg.config(clock))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := r.Resolve(ctx, testID); err != nil {
				t.Fatal(err)
			}
			clock.Advance(tt.advance)
			if _, err := r.Resolve(ctx, testID); err != nil {
				t.Fatal(err)
			}
			if got := tg.hits.Load(); got != tt.wantFetch {
				t.Fatalf("fetches = %d, want %d", got, tt.wantFetch)
			}
		})
	}
}

// TestResolveErrorsNeverCached: CIMD-06, after a 500 or an invalid
// document the next Resolve fetches again and can succeed.
func TestResolveErrorsNeverCached(t *testing.T) {
	t.Parallel()
	for _, bad := range []http.HandlerFunc{
		func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) },
		serveDoc(docJSON(testID+"x"), "Cache-Control", "max-age=3600"),
	} {
		var mu sync.Mutex
		fail := true
		tg := newTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			f := fail
			fail = false
			mu.Unlock()
			if f {
				bad(w, r)
				return
			}
			serveDoc(docJSON(testID), "Cache-Control", "max-age=3600")(w, r)
		}))
		r, err := NewResolver(tg.config(newClock()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Resolve(context.Background(), testID); err == nil {
			t.Fatal("first Resolve succeeded")
		}
		if _, err := r.Resolve(context.Background(), testID); err != nil {
			t.Fatalf("CIMD-06: second Resolve after an error: %v", err)
		}
		if tg.hits.Load() != 2 {
			t.Fatalf("fetches = %d, want 2", tg.hits.Load())
		}
	}
}
