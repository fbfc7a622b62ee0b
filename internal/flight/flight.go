package flight

import (
	"context"

	"golang.org/x/sync/singleflight"
)

// Do runs fn once for the concurrent callers of g with key and returns its
// result, or the zero T and ctx.Err() when ctx ends first; fn then goes on
// for the other callers.
func Do[T any](ctx context.Context, g *singleflight.Group, key string, fn func() (T, error)) (T, error) {
	ch := g.DoChan(key, func() (any, error) { return fn() })
	var zero T
	select {
	case res := <-ch:
		if res.Err != nil {
			return zero, res.Err
		}
		v, _ := res.Val.(T) // a nil interface T arrives as a nil any
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}
