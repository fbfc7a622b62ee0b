package dpop_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

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
			store := &oauthtest.ReplayStore{Fail: tt.fail}
			a := newEnv(t, func(c *dpop.VerifierConfig) { c.Replay = store })
			b := newEnv(t, func(c *dpop.VerifierConfig) { c.Replay = store })
			proof := a.proof(nil, map[string]any{"jti": "once"})
			_, err := a.v.Verify(context.Background(), proof, resourceReq())
			if tt.second {
				if err != nil {
					t.Fatalf("first use: %v", err)
				}
				if store.Len() != 1 {
					t.Fatalf("the store holds %d keys after one proof, want 1", store.Len())
				}
				_, err = b.v.Verify(context.Background(), proof, resourceReq())
			}
			if tt.wantErr == nil {
				if err != nil || store.Len() != 1 {
					t.Fatalf("Verify = %v with %d keys stored; want nil and 1", err, store.Len())
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
