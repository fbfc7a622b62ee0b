package authserver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestMemoryStoreClientBound: the in-memory client registry is bounded;
// past MaxMemoryClients a new client is refused with temporarily_unavailable
// (503, never a 500), while existing clients can still be updated.
func TestMemoryStoreClientBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemoryStore()
	for i := range MaxMemoryClients {
		if err := m.SaveClient(ctx, &Client{ID: fmt.Sprintf("c%d", i)}); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	err := m.SaveClient(ctx, &Client{ID: "one-too-many"})
	if !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}) {
		t.Fatalf("err = %v, want temporarily_unavailable", err)
	}
	if statusFor(oauthmeta.CodeTemporarilyUnavailable) != 503 {
		t.Fatalf("temporarily_unavailable maps to %d, want 503", statusFor(oauthmeta.CodeTemporarilyUnavailable))
	}
	if err := m.SaveClient(ctx, &Client{ID: "c0", Name: "updated"}); err != nil {
		t.Fatalf("updating an existing client at the bound: %v", err)
	}
	if _, err := m.Client(ctx, "one-too-many"); err == nil {
		t.Fatal("the refused client was stored")
	}
}
