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
