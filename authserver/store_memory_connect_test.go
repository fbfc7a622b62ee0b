package authserver

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestMemoryConnectTicketBound: the memory store holds at most
// MaxConnectTickets tickets; past them a new one is temporarily_unavailable
// until the sweep drops expired ones, and a full store still answers for
// the tickets it holds.
func TestMemoryConnectTicketBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMemoryStore()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for i := range MaxConnectTickets {
		if err := m.SaveConnectTicket(ctx, &ConnectTicket{ID: "t" + strconv.Itoa(i), Kind: TicketRef, ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatalf("ticket %d: %v", i, err)
		}
	}
	err := m.SaveConnectTicket(ctx, &ConnectTicket{ID: "one-more", ExpiresAt: now.Add(time.Minute)})
	if oe, ok := errors.AsType[*oauthmeta.Error](err); !ok || oe.Code != oauthmeta.CodeTemporarilyUnavailable {
		t.Fatalf("past the bound: %v, want temporarily_unavailable", err)
	}
	if _, err := m.ConnectTicket(ctx, "t0", now); err != nil {
		t.Fatalf("a held ticket: %v", err)
	}
	if err := m.Sweep(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := m.SaveConnectTicket(ctx, &ConnectTicket{ID: "one-more", ExpiresAt: now.Add(2 * time.Minute)}); err != nil {
		t.Fatalf("after the sweep: %v", err)
	}
}
