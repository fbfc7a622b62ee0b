package flight_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/internal/flight"
)

func TestDoReturnsTheCallsValue(t *testing.T) {
	t.Parallel()
	var g singleflight.Group
	v, err := flight.Do(t.Context(), &g, "k", func() (*int, error) { n := 42; return &n, nil })
	if err != nil || v == nil || *v != 42 {
		t.Fatalf("got %v, %v; want 42, nil", v, err)
	}
}

func TestDoReturnsANilInterface(t *testing.T) {
	t.Parallel()
	var g singleflight.Group
	v, err := flight.Do(t.Context(), &g, "k", func() (fmt.Stringer, error) { return nil, nil })
	if v != nil || err != nil {
		t.Fatalf("got %v, %v; want nil, nil", v, err)
	}
}

func TestDoReturnsTheCallsError(t *testing.T) {
	t.Parallel()
	var g singleflight.Group
	want := errors.New("boom")
	v, err := flight.Do(t.Context(), &g, "k", func() (*int, error) { return nil, want })
	if v != nil || !errors.Is(err, want) {
		t.Fatalf("got %v, %v; want nil, %v", v, err, want)
	}
}

func TestDoStopsWaitingWhenCtxEnds(t *testing.T) {
	t.Parallel()
	var g singleflight.Group
	release := make(chan struct{})
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	v, err := flight.Do(ctx, &g, "k", func() (*int, error) {
		defer close(done)
		<-release
		return new(int), nil
	})
	if v != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, %v; want nil, context.Canceled", v, err)
	}
	close(release)
	<-done // the call itself ran to completion
}

// TestDoGoesOnForTheOthers: a caller whose ctx ends leaves the call
// running, and the caller still waiting gets its result from that one
// call.
func TestDoGoesOnForTheOthers(t *testing.T) {
	t.Parallel()
	var g singleflight.Group
	started, release := make(chan struct{}), make(chan struct{})
	calls := 0 // written by the one call, read after its result arrived
	fn := func() (*int, error) {
		calls++
		close(started)
		<-release
		n := 7
		return &n, nil
	}
	type result struct {
		v   *int
		err error
	}
	first := make(chan result, 1)
	go func() { v, err := flight.Do(t.Context(), &g, "k", fn); first <- result{v, err} }()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := flight.Do(ctx, &g, "k", fn); !errors.Is(err, context.Canceled) {
		t.Fatalf("second caller: %v, want context.Canceled", err)
	}
	close(release)
	if r := <-first; r.err != nil || r.v == nil || *r.v != 7 || calls != 1 {
		t.Fatalf("first caller: %v, %v after %d calls; want 7, nil after 1", r.v, r.err, calls)
	}
}
