package remotekeys_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
)

// TestReady: Ready fetches a set never fetched, answers fresh keys from
// memory, fails once the keys are older than StaleAfter and the JWK Set
// cannot be had, and passes again when it comes back.
func TestReady(t *testing.T) {
	t.Parallel()
	srv := oauthtest.NewJWKSServer(t, oauthtest.NewKey(t, oauthtest.ES256, "k1"))
	clk := oauthtest.NewClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	rk, err := remotekeys.New(remotekeys.Config{
		JWKSURI: srv.JWKSURI, TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true,
		Now: clk.Now, StaleAfter: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	ctx := context.Background()
	steps := []struct {
		name    string
		advance time.Duration
		status  int
		ok      bool
		fetches int // total JWKS requests after the step
	}{
		{"first probe fetches", 0, http.StatusOK, true, 1},
		{"fresh: from memory", 59 * time.Minute, http.StatusOK, true, 1},
		{"fresh although the set is down", 0, http.StatusServiceUnavailable, true, 1},
		{"stale and down", 2 * time.Minute, http.StatusServiceUnavailable, false, 2},
		{"stale and down, refetch rate-limited", time.Second, http.StatusServiceUnavailable, false, 2},
		{"back", time.Minute, http.StatusOK, true, 3},
		{"fresh again", time.Minute, http.StatusOK, true, 3},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		srv.SetStatus(s.status)
		err := rk.Ready(ctx)
		if (err == nil) != s.ok {
			t.Fatalf("%s: Ready = %v, want ok %v", s.name, err, s.ok)
		}
		if err != nil && (!errors.Is(err, keyset.ErrUnavailable) || !strings.Contains(err.Error(), "stale")) {
			t.Fatalf("%s: Ready = %v, want a stale ErrUnavailable", s.name, err)
		}
		if got := srv.JWKSFetches(); got != s.fetches {
			t.Fatalf("%s: %d JWKS fetches, want %d", s.name, got, s.fetches)
		}
	}
	// Stale keys still verify.
	if _, err := rk.Keys(ctx, "k1"); err != nil {
		t.Fatalf("Keys: %v", err)
	}
	_ = rk.Close()
	if err := rk.Ready(ctx); !errors.Is(err, remotekeys.ErrClosed) {
		t.Fatalf("Ready after Close = %v, want ErrClosed", err)
	}
}

// TestReadyNeverFetched: a set that was never fetched is not ready.
func TestReadyNeverFetched(t *testing.T) {
	t.Parallel()
	srv := oauthtest.NewJWKSServer(t, oauthtest.NewKey(t, oauthtest.ES256, "k1"))
	srv.SetStatus(http.StatusInternalServerError)
	rk, err := remotekeys.New(remotekeys.Config{
		JWKSURI: srv.JWKSURI, TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	if err := rk.Ready(context.Background()); !errors.Is(err, keyset.ErrUnavailable) || !strings.Contains(err.Error(), "never fetched") {
		t.Fatalf("Ready = %v, want never fetched", err)
	}
}
