package remotekeys_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
)

// TestRemoteKeysCloseEndsFetch: Close cancels a fetch in progress rather
// than waiting out its timeout, returns once it has ended, may be called
// again, and afterwards Keys fails with ErrClosed without a request.
func TestRemoteKeysCloseEndsFetch(t *testing.T) {
	t.Parallel()
	srv := oauthtest.NewJWKSServer(t, oauthtest.NewKey(t, oauthtest.ES256, "k1"))
	release := srv.Hold()
	defer release()
	rk, err := remotekeys.New(remotekeys.Config{
		JWKSURI: srv.JWKSURI, TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true,
		Timeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rk.Keys(context.Background(), "k1")
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); srv.JWKSFetches() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fetch did not start")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- rk.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the held fetch instead of ending it")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Keys succeeded although Close ended its fetch")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Keys still waiting after Close")
	}
	if err := rk.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	n := srv.JWKSFetches()
	if _, err := rk.Keys(context.Background(), "k1"); !errors.Is(err, remotekeys.ErrClosed) {
		t.Fatalf("Keys after Close: %v, want ErrClosed", err)
	}
	if got := srv.JWKSFetches(); got != n {
		t.Fatalf("Keys after Close fetched (%d requests, want %d)", got, n)
	}
}
