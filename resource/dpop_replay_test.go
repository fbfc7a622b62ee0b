package resource_test

import (
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestDPoPSharedReplayStore: two instances sharing a store of the caller's
// own refuse a proof the other accepted with 401 invalid_dpop_proof (RFC
// 9449 §11.1), not as an outage; a failing store fails closed with 503 and
// no challenge.
func TestDPoPSharedReplayStore(t *testing.T) {
	t.Parallel()
	store := &oauthtest.ReplayStore{}
	a := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) { c.DPoP.Replay = store })
	b := &dpopFixture{fixture: newFixture(t, func(c *resource.Config) {
		c.DPoP = resource.DPoPConfig{Mode: resource.DPoPAllowed, VerifierConfig: dpop.VerifierConfig{Replay: store}}
		c.Issuers[0].Keys = keyset.Static{{ID: "k1", Public: a.key.Public()}}
	})}
	p := a.proof(t, a.bound)
	if rec, _ := a.serve(dpopPost("DPoP", a.bound, p)); rec.Code != 200 {
		t.Fatalf("first instance: %d %q", rec.Code, rec.Header().Values("WWW-Authenticate"))
	}
	if store.Len() != 1 {
		t.Fatalf("the shared store holds %d keys after one proof, want 1", store.Len())
	}
	rec, _ := b.serve(dpopPost("DPoP", a.bound, p))
	if rec.Code != 401 {
		t.Fatalf("second instance, replayed proof: %d, want 401", rec.Code)
	}
	checkDPoPChallenges(t, rec.Header(), resource.DPoPAllowed, "DPoP", "invalid_dpop_proof")
	ev := b.events.all()
	if e := ev[len(ev)-1]; !errors.Is(e.Err, resource.ErrDPoPReplayed) || !errors.Is(e.Err, dpop.ErrReplayedProof) || e.Reason != "proof replayed" {
		t.Errorf("audit Err = %v, Reason %q; want the replayed-proof reason", e.Err, e.Reason)
	}

	down := newDPoPFixture(t, resource.DPoPAllowed, func(c *resource.Config) {
		c.DPoP.Replay = &oauthtest.ReplayStore{Fail: errors.New("userstore: storage down")}
	})
	rec, _ = down.serve(dpopPost("DPoP", down.bound, down.proof(t, down.bound)))
	if rec.Code != 503 || rec.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("failing replay store: %d %q; want 503 without a challenge", rec.Code, rec.Header().Values("WWW-Authenticate"))
	}
	ev = down.events.all()
	if e := ev[len(ev)-1]; !errors.Is(e.Err, resource.ErrDPoPReplayUnavailable) || !errors.Is(e.Err, resource.ErrUnavailable) {
		t.Errorf("failing store: audit Err = %v, want the replay-unavailable reason", e.Err)
	}
}
