package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInProcess is the example: an end-to-end OAuth test of an MCP server,
// with the authorization server in the same process.
func TestInProcess(t *testing.T) {
	t.Parallel()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Without a token the server refuses and points to its metadata (RS-04).
	resp, err := http.Post(s.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// With the client library, the whole flow runs and the tool sees the
	// validated subject.
	msg, err := greet(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if msg != "hello, demo-user" {
		t.Fatalf("greet = %q", msg)
	}
}
