package oauthtest

import (
	"slices"
	"sync"
)

// The fakes' state is guarded by one mutex each; these helpers keep every
// access a one-liner.

// locked runs fn with mu held.
func locked(mu *sync.Mutex, fn func()) {
	mu.Lock()
	defer mu.Unlock()
	fn()
}

// setLocked sets *p to v with mu held.
func setLocked[T any](mu *sync.Mutex, p *T, v T) { locked(mu, func() { *p = v }) }

// cloneLocked returns a copy of *s taken with mu held.
func cloneLocked[T any](mu *sync.Mutex, s *[]T) []T {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*s)
}
