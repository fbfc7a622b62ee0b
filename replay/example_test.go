package replay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/replay"
)

func ExampleNewMemory() {
	store, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: 10000})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	until := time.Now().Add(5 * time.Minute)
	fmt.Println(store.Use(ctx, "client-1\x00jti-42", until))
	fmt.Println(errors.Is(store.Use(ctx, "client-1\x00jti-42", until), replay.ErrReplayed))
	// Output:
	// <nil>
	// true
}

func ExampleMemory_Use() {
	store, _ := replay.NewMemory(replay.MemoryConfig{MaxEntries: 1})
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	fmt.Println(store.Use(ctx, "a", until))
	// Full of live keys: refuse rather than forget one.
	fmt.Println(errors.Is(store.Use(ctx, "b", until), replay.ErrFull))
	// Output:
	// <nil>
	// true
}

func ExampleMemory_Len() {
	store, _ := replay.NewMemory(replay.MemoryConfig{})
	_ = store.Use(context.Background(), "a", time.Now().Add(time.Minute))
	fmt.Println(store.Len())
	// Output: 1
}

// mapStore is a Store of one's own. A real one would keep its keys on
// storage every instance shares, record each with one atomic
// set-if-absent, and let them expire at until.
type mapStore struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (s *mapStore) Use(_ context.Context, key string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.seen[key]; ok && time.Now().Before(t) {
		return fmt.Errorf("mapstore: %w", replay.ErrReplayed)
	}
	s.seen[key] = until
	return nil
}

// A store of one's own plugged into a DPoP verifier: the second
// presentation of a proof is refused as a replay.
func ExampleStore() {
	verifier, err := dpop.NewVerifier(dpop.VerifierConfig{Replay: &mapStore{seen: map[string]time.Time{}}})
	if err != nil {
		panic(err)
	}
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	req := dpop.Request{Method: "POST", URL: "https://mcp.example.com/mcp", AccessToken: "the-access-token"}
	proof, _ := prover.Proof(req)

	_, err = verifier.Verify(context.Background(), proof, req)
	fmt.Println(err)
	_, err = verifier.Verify(context.Background(), proof, req)
	fmt.Println(errors.Is(err, dpop.ErrReplayedProof))
	// Output:
	// <nil>
	// true
}
