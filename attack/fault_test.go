package attack

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// load runs loadgen against e's MCP endpoint and fails the test on any
// wrongly allowed or refused request or transport error.
func (e *rsEnv) load(d time.Duration, next func(w, i int) loadgen.Request) *loadgen.Report {
	e.t.Helper()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{
		Target: mcpResource, Client: &http.Client{Transport: e.net.Transport(), Timeout: 10 * time.Second},
		Next: next, Concurrency: 8, Duration: d,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	e.t.Logf("load:\n%s", buf.String())
	if rep.Wrong() != 0 || rep.TransportErrors != 0 {
		e.t.Errorf("%d requests answered wrongly, %d transport errors", rep.Wrong(), rep.TransportErrors)
	}
	return rep
}

// fresh mints a valid token with key under a new jti (a verified-token
// cache miss, so the key set is consulted).
func (e *rsEnv) fresh(key *oauthtest.Key, seq *atomic.Int64) string {
	c := e.claims()
	c.ID = fmt.Sprintf("jti-%d", seq.Add(1))
	tok := key.Mint(e.t, c)
	e.sec.Add(tok)
	return tok
}

// TestJWKSFaultsUnderLoad: while the resource server is under load, the
// authorization server's JWK Set endpoint goes down, hangs, or answers
// garbage. Tokens signed by known keys keep being served from the cached
// keys; tokens with an unknown kid are refused (fail closed, 401), and the
// failing endpoint is asked at most once per refetch interval.
func TestJWKSFaultsUnderLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode jwksMode
	}{{"down (503)", jwksDown}, {"slow (never answers)", jwksSlow}, {"garbage", jwksGarbage}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRSEnv(t)
			if res := e.send(rpc{auth: []string{"Bearer " + e.token(nil)}}); res.status != http.StatusOK {
				t.Fatalf("warm-up: %d", res.status)
			}
			e.iss.Mode(tc.mode)
			e.clock.Advance(resource.DefaultRefetchInterval + time.Second) // a refetch is allowed now
			before := e.iss.Fetches()
			attacker := oauthtest.NewKey(t, oauthtest.ES256, "rotated-away")
			var seq atomic.Int64
			rep := e.load(1500*time.Millisecond, func(w, i int) loadgen.Request {
				switch i % 3 {
				case 0:
					return loadgen.Request{Kind: "unknown-kid", Token: attacker.Mint(t, e.claims()), WantStatus: 401}
				default:
					return loadgen.Request{Kind: "valid-fresh", Token: e.fresh(e.es, &seq), WantStatus: 200}
				}
			})
			if rep.ByKind["valid-fresh"] == nil || rep.ByKind["valid-fresh"].Statuses[200] == 0 || rep.ByKind["unknown-kid"] == nil {
				t.Fatalf("the load did not exercise both kinds: %+v", rep.ByKind)
			}
			if n := e.iss.Fetches() - before; n > 1 {
				t.Errorf("the failing JWK Set endpoint was asked %d times; want at most 1 per refetch interval", n)
			}
			e.sec.Check(t)
		})
	}
}

// TestKeyRotationUnderLoad: the authorization server publishes a new key
// and starts signing with it while the resource server is under load. The
// new tokens are accepted after exactly one JWK Set fetch, shared by all
// concurrent requests; the old key's tokens keep working.
func TestKeyRotationUnderLoad(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	if res := e.send(rpc{auth: []string{"Bearer " + e.token(nil)}}); res.status != http.StatusOK {
		t.Fatalf("warm-up: %d", res.status)
	}
	next := oauthtest.NewKey(t, oauthtest.ES256, "es-2")
	var rotated atomic.Bool
	var seq atomic.Int64
	var fetchesAtRotation atomic.Int64
	go func() {
		time.Sleep(500 * time.Millisecond)
		e.iss.Set(e.es, e.rsa, next)
		e.clock.Advance(resource.DefaultRefetchInterval + time.Second)
		fetchesAtRotation.Store(e.iss.Fetches())
		rotated.Store(true)
	}()
	rep := e.load(1500*time.Millisecond, func(w, i int) loadgen.Request {
		if rotated.Load() && i%2 == 0 {
			return loadgen.Request{Kind: "new-key", Token: e.fresh(next, &seq), WantStatus: 200}
		}
		return loadgen.Request{Kind: "old-key", Token: e.fresh(e.es, &seq), WantStatus: 200}
	})
	if rep.ByKind["new-key"] == nil || rep.ByKind["new-key"].Statuses[200] == 0 {
		t.Fatalf("no new-key token was served: %+v", rep.ByKind)
	}
	if n := e.iss.Fetches() - fetchesAtRotation.Load(); n != 1 {
		t.Errorf("the rotation cost %d JWK Set fetches; want exactly 1", n)
	}
	e.sec.Check(t)
}
