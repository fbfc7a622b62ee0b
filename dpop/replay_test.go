package dpop_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

// userStore is a replay.Store written outside the module, as a user (or a
// shared-storage backend) would: a map, its own error wrapping
// replay.ErrReplayed for a key seen before, and fail, when set, as the
// answer to every use.
type userStore struct {
	mu   sync.Mutex
	seen map[string]time.Time
	fail error
}

func (s *userStore) Use(_ context.Context, key string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if _, ok := s.seen[key]; ok {
		return fmt.Errorf("mine: %w", replay.ErrReplayed)
	}
	s.seen[key] = until
	return nil
}

// TestVerifyExternalReplayStore: a store of the caller's own, shared by two
// verifiers (two instances of one server), refuses a proof the other
// accepted with ErrReplayedProof (invalid_dpop_proof), not as an outage;
// a failing or full store refuses every proof with
// ErrReplayCheckUnavailable (temporarily_unavailable).
func TestVerifyExternalReplayStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fail     error // the store's answer to every use; nil records
		second   bool  // present the proof again, at the other verifier
		wantErr  error
		wantCode oauthmeta.ErrorCode
	}{
		{"first use", nil, false, nil, ""},
		{"replayed at another instance", nil, true, dpop.ErrReplayedProof, oauthmeta.CodeInvalidDPoPProof},
		{"the bare sentinel", replay.ErrReplayed, false, dpop.ErrReplayedProof, oauthmeta.CodeInvalidDPoPProof},
		{"store down", errors.New("mine: connection refused"), false, dpop.ErrReplayCheckUnavailable, oauthmeta.CodeTemporarilyUnavailable},
		{"store full", fmt.Errorf("mine: %w", replay.ErrFull), false, dpop.ErrReplayCheckUnavailable, oauthmeta.CodeTemporarilyUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &userStore{seen: map[string]time.Time{}, fail: tt.fail}
			a := newEnv(t, func(c *dpop.VerifierConfig) { c.Replay = store })
			b := newEnv(t, func(c *dpop.VerifierConfig) { c.Replay = store })
			proof := a.proof(nil, map[string]any{"jti": "once"})
			_, err := a.v.Verify(context.Background(), proof, resourceReq())
			if tt.second {
				if err != nil {
					t.Fatalf("first use: %v", err)
				}
				if len(store.seen) != 1 {
					t.Fatalf("the store holds %d keys after one proof, want 1", len(store.seen))
				}
				_, err = b.v.Verify(context.Background(), proof, resourceReq())
			}
			if tt.wantErr == nil {
				if err != nil || len(store.seen) != 1 {
					t.Fatalf("Verify = %v with %d keys stored; want nil and 1", err, len(store.seen))
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, &oauthmeta.Error{Code: tt.wantCode}) {
				t.Fatalf("Verify = %v; want %v (%s)", err, tt.wantErr, tt.wantCode)
			}
			if tt.wantErr == dpop.ErrReplayedProof && errors.Is(err, dpop.ErrReplayCheckUnavailable) {
				t.Fatalf("a replay reported as an outage: %v", err)
			}
		})
	}
}
