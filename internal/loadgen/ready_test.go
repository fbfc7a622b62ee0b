package loadgen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// TestStartCommandReadyURL: with ReadyURL a child that prints nothing is
// ready once the URL answers 200, not before; one whose URL never does
// times out and is stopped; a URL off the loopback is refused.
func TestStartCommandReadyURL(t *testing.T) {
	t.Parallel()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	var hits atomic.Int64
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer healthy.Close()
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer never.Close()
	ctx := context.Background()

	p, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: sleep, Args: []string{"30"}, ReadyURL: healthy.URL + "/ping"})
	if err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n < 3 || !strings.Contains(p.Ready, "/ping") {
		t.Errorf("ready after %d polls: %q", n, p.Ready)
	}
	_ = p.Stop(5 * time.Second) // sleep dies of the SIGTERM: an exit error

	start := time.Now()
	if _, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: sleep, Args: []string{"30"}, ReadyURL: never.URL,
		Ready: 300 * time.Millisecond}); !errors.Is(err, loadgen.ErrProtect) || time.Since(start) > 10*time.Second {
		t.Errorf("never ready: %v after %v", err, time.Since(start))
	}

	for _, u := range []string{"http://192.0.2.1/ping", "https://127.0.0.1/ping", "::"} {
		if _, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: sleep, Args: []string{"30"}, ReadyURL: u}); !errors.Is(err, loadgen.ErrConfig) {
			t.Errorf("ReadyURL %q: %v", u, err)
		}
	}
}
