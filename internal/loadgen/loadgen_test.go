package loadgen_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// TestRunFixture drives the fixture briefly with the default mix, with both
// key sources: nothing may be wrongly allowed or refused, every kind must
// occur, and the report must add up. Run it under -race.
func TestRunFixture(t *testing.T) {
	t.Parallel()
	for _, remote := range []bool{false, true} {
		f, err := loadgen.NewFixture(loadgen.FixtureConfig{Remote: remote, CachedTokens: 16})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		rep, err := loadgen.Run(context.Background(), loadgen.Config{
			Target: f.URL, Client: f.Client(8), Next: f.Next(loadgen.DefaultMix()),
			Concurrency: 8, Duration: 2 * time.Minute, MaxRequests: 400, // ends on MaxRequests: no request is cut off in flight
		})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		rep.WriteText(&buf)
		t.Logf("remote=%v\n%s", remote, buf.String())
		if rep.Wrong() != 0 || rep.TransportErrors != 0 {
			t.Errorf("wrong %d, transport errors %d", rep.Wrong(), rep.TransportErrors)
		}
		if rep.Requests == 0 || len(rep.ByKind) < 8 {
			t.Errorf("requests %d, kinds %d", rep.Requests, len(rep.ByKind))
		}
		var sum int64
		for _, k := range rep.ByKind {
			sum += k.Requests
		}
		if sum != rep.Requests || f.Served.Load() != rep.ByKind["valid-cached"].Requests+rep.ByKind["valid-fresh"].Requests {
			t.Errorf("sum %d, requests %d, served %d", sum, rep.Requests, f.Served.Load())
		}
		if remote && f.JWKSFetches() != 1 {
			t.Errorf("JWK Set fetched %d times; want 1 (unknown kids are rate-limited)", f.JWKSFetches())
		}
	}
}

func TestRunConfig(t *testing.T) {
	t.Parallel()
	if _, err := loadgen.Run(context.Background(), loadgen.Config{}); !errors.Is(err, loadgen.ErrConfig) {
		t.Errorf("err = %v", err)
	}
}
