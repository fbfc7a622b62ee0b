package requeststate_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
)

// A tool asks the user to connect an account and hands the client a sealed
// requestState; on the retry it opens the state with the binding of the
// retried request, which must be the same user, client and call.
func Example() {
	key := make([]byte, requeststate.KeySize)
	_, _ = rand.Read(key)
	store, _ := replay.NewMemory(replay.MemoryConfig{})
	s, err := requeststate.New(requeststate.Config{Key: key, TTL: 10 * time.Minute, Replay: store})
	if err != nil {
		panic(err)
	}
	call := requeststate.Binding{Issuer: "https://as.example.com", Subject: "alice", ClientID: "ide",
		Method: "tools/call", Name: "list_repos", Arguments: []byte(`{"org":"acme"}`)}
	state, _ := s.Seal(call, []byte("github"))

	data, err := s.Open(context.Background(), state, call)
	fmt.Println(string(data), err)

	_, err = s.Open(context.Background(), state, call)
	fmt.Println(errors.Is(err, requeststate.ErrReplayed))

	other := call
	other.Name = "delete_repo"
	state, _ = s.Seal(call, nil)
	_, err = s.Open(context.Background(), state, other)
	fmt.Println(err)
	// Output:
	// github <nil>
	// true
	// requeststate: state bound to another name
}

// Server-side state lives under a handle the client holds; only the user
// who created it finds it again.
func ExampleHandles() {
	h, _ := requeststate.NewHandles[[]string](requeststate.HandlesConfig{TTL: time.Hour})
	alice := requeststate.Owner{Issuer: "https://as.example.com", Subject: "alice"}
	handle, _ := h.Put(alice, []string{"page 2 of the results"})

	v, err := h.Get(alice, handle)
	fmt.Println(v, err)
	_, err = h.Get(requeststate.Owner{Issuer: "https://as.example.com", Subject: "mallory"}, handle)
	fmt.Println(err)
	// Output:
	// [page 2 of the results] <nil>
	// requeststate: unknown handle
}
