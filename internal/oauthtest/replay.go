package oauthtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/replay"
)

// ReplayStore is a replay.Store written outside package replay, as a user
// or a shared-storage backend would: a map, its own error wrapping
// replay.ErrReplayed for a key seen before, and Fail, when set, as the
// answer to every use. The zero value records.
type ReplayStore struct {
	// Fail, when set before the first use, is the answer to every use.
	Fail error

	mu   sync.Mutex
	seen map[string]time.Time
}

// Use records key until until, or reports it as replayed.
func (s *ReplayStore) Use(_ context.Context, key string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return s.Fail
	}
	if _, ok := s.seen[key]; ok {
		return fmt.Errorf("userstore: %w", replay.ErrReplayed)
	}
	if s.seen == nil {
		s.seen = map[string]time.Time{}
	}
	s.seen[key] = until
	return nil
}

// Len returns how many keys the store holds.
func (s *ReplayStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}
