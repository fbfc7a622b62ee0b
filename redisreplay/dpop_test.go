package redisreplay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/redisreplay"
)

// TestDPoPVerifierReplay: two plain dpop.Verifiers (two instances of a
// server of one's own) sharing the Redis store: a proof accepted by one is
// refused by the other with ErrReplayedProof (invalid_dpop_proof), not as
// an outage; with Redis stopped a fresh proof is refused with
// ErrReplayCheckUnavailable (temporarily_unavailable).
func TestDPoPVerifierReplay(t *testing.T) {
	ctx := context.Background()
	rd := testdb.StartRedis(t)
	var verifiers []*dpop.Verifier
	for range 2 {
		c, err := redisreplay.NewClient(rd.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		v, err := dpop.NewVerifier(dpop.VerifierConfig{Replay: redisreplay.New(c, "test:dpop:")})
		if err != nil {
			t.Fatal(err)
		}
		verifiers = append(verifiers, v)
	}
	prover, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	req := dpop.Request{Method: "POST", URL: "http://127.0.0.1:9/mcp", AccessToken: "the-access-token"}
	proof, err := prover.Proof(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifiers[0].Verify(ctx, proof, req); err != nil {
		t.Fatalf("first presentation: %v", err)
	}
	_, err = verifiers[1].Verify(ctx, proof, req)
	if !errors.Is(err, dpop.ErrReplayedProof) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidDPoPProof}) {
		t.Fatalf("the same proof at the other instance: %v; want ErrReplayedProof (invalid_dpop_proof)", err)
	}

	rd.Stop()
	fresh, err := prover.Proof(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = verifiers[1].Verify(ctx, fresh, req)
	if !errors.Is(err, dpop.ErrReplayCheckUnavailable) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}) {
		t.Fatalf("with Redis stopped: %v; want ErrReplayCheckUnavailable (temporarily_unavailable)", err)
	}
}
