package requeststate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/requeststate"
)

// FuzzOpen: only a state sealed for the binding opens, and no input
// panics or fails without ErrRefused.
func FuzzOpen(f *testing.F) {
	clk := &fixedClock{t: t0}
	s, err := requeststate.New(requeststate.Config{Key: testKey, Now: clk.now})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := s.Seal(binding(), []byte("github"))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add("")
	f.Add("AQ")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, state string) {
		data, err := s.Open(context.Background(), state, binding())
		if err != nil {
			if !errors.Is(err, requeststate.ErrRefused) {
				t.Fatalf("error without ErrRefused: %v", err)
			}
			return
		}
		// Fuzzing workers seal their own seed (random nonce), so any state
		// that opens must carry the one sealed content.
		if string(data) != "github" {
			t.Fatalf("a forged state opened: %q", state)
		}
	})
}
