package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAuthserverPprofAddr: authserver's --pprof-addr serves the profiles
// on a loopback address and refuses any other.
func TestAuthserverPprofAddr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	startAuthserverIssuer(t, "--insecure-http", "--pprof-addr", addr)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("pprof: %d %.100s", resp.StatusCode, body)
	}

	for _, bad := range []string{"0.0.0.0:0", "192.0.2.1:6060", "localhost"} {
		err := serveAuthserver(context.Background(), []string{"--addr", "127.0.0.1:0", "--insecure-http", "--pprof-addr", bad},
			io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "--pprof-addr") {
			t.Errorf("--pprof-addr %s: %v, want a refusal", bad, err)
		}
	}
}
