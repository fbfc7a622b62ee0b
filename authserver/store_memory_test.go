package authserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestMemoryStoreClientBound: the in-memory client registry is bounded;
// past maxMemoryClients a new client is refused with temporarily_unavailable
// (503, never a 500), while existing clients can still be updated.
func TestMemoryStoreClientBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemoryStore()
	for i := range maxMemoryClients {
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

// TestMemoryPendingBound checks the memory store's pending table: at
// MaxPendingAuthorizations a new record pushes out the least recently used
// one instead of refusing the login, and Sweep drops expired records only.
func TestMemoryPendingBound(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := NewMemoryStore()
	req := &authRequest{client: &Client{ID: "c", Kind: ClientDynamic}, redirectURI: "http://127.0.0.1/cb", challenge: "ch"}
	save := func(id string, expires time.Time) {
		t.Helper()
		if err := m.SavePending(ctx, pendingRecord(id, "csrf", "browser", req, expires)); err != nil {
			t.Fatalf("SavePending(%s) = %v", id, err)
		}
	}
	for i := range MaxPendingAuthorizations {
		save("p"+strconv.Itoa(i), now.Add(PendingTTL))
	}
	save("new", now.Add(PendingTTL))
	if n := m.pending.Len(); n != MaxPendingAuthorizations {
		t.Fatalf("pending records = %d, want %d", n, MaxPendingAuthorizations)
	}
	take := func(id string, at time.Time) error {
		_, err := m.TakePending(ctx, id, at, pendingMatcher("csrf", "browser"))
		return err
	}
	if err := take("p0", now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oldest record after overflow: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"p1", "new"} {
		if err := take(id, now); err != nil {
			t.Fatalf("TakePending(%s) = %v", id, err)
		}
	}

	m = NewMemoryStore()
	save("short", now.Add(time.Minute))
	save("long", now.Add(PendingTTL))
	if err := m.Sweep(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := take("short", now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired record after Sweep: %v, want ErrNotFound", err)
	}
	if err := take("long", now); err != nil {
		t.Fatalf("live record after Sweep: %v", err)
	}
}
