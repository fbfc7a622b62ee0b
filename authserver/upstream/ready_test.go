package upstream

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReady: the server's Ready asks the OpenID Connect provider, which
// discovers and fetches its key set on the first probe, answers from
// memory while both are fresh, fails once the key set is stale and its
// JWK Set down, passes when it is back, and fails while discovery is down
// once the metadata is older than an hour.
func TestReady(t *testing.T) {
	t.Parallel()
	h, p := upstreamHarness(t, nil)
	var discoveries atomic.Int32
	p.set(func(p *fakeProvider) { p.onDiscovery = func() { discoveries.Add(1) } })
	ctx := context.Background()
	for _, s := range []struct {
		name          string
		advance       time.Duration
		jwksDown      bool
		discoveryDown bool
		ok            bool
		jwksFetches   int // so far
	}{
		{"first probe discovers and fetches", 0, false, false, true, 1},
		{"fresh, from memory", 59 * time.Minute, false, false, true, 1},
		{"fresh although the JWK Set is down", 0, true, false, true, 1},
		{"stale and the JWK Set down", 2 * time.Minute, true, false, false, 2},
		{"stale, refetch rate-limited", time.Second, true, false, false, 2},
		{"JWK Set back", time.Minute, false, false, true, 3},
		{"fresh again", time.Minute, false, false, true, 3},
		{"metadata old and discovery down", time.Hour, false, true, false, 3},
		{"discovery back", 0, false, false, true, 4},
	} {
		h.clock.Advance(s.advance)
		p.set(func(p *fakeProvider) { p.jwksDown, p.down = s.jwksDown, s.discoveryDown })
		err := h.as.Ready(ctx)
		if (err == nil) != s.ok {
			t.Fatalf("%s: Ready = %v, want ok %v", s.name, err, s.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "upstream login "+p.issuer) {
			t.Fatalf("%s: Ready = %v, want the provider named", s.name, err)
		}
		var n int
		p.set(func(p *fakeProvider) { n = p.jwksFetches })
		if n != s.jwksFetches {
			t.Fatalf("%s: %d JWK Set fetches, want %d", s.name, n, s.jwksFetches)
		}
	}
	// One at first, one when the metadata was an hour old, one failed,
	// one when discovery came back.
	if n := discoveries.Load(); n != 4 {
		t.Fatalf("%d discoveries, want 4", n)
	}
}
