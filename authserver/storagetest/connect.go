package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// testConnect checks a [authserver.ConnectStore]: accounts are keyed by
// subject and provider, replaced by a save, deleted only while they name
// the same tokens and listed by grant; a ticket is read until it expires
// and taken once, only when match accepts it, even when many callers try
// at the same moment; records are copied; the sweep drops what expired.
func testConnect(t *testing.T, st authserver.ConnectStore) {
	if st == nil {
		t.Fatal("open returned a Storage without Connect")
	}
	ctx := context.Background()
	now := storageNow
	acct := func(sub, provider, tokens, grant string) *authserver.ConnectedAccount {
		return &authserver.ConnectedAccount{Subject: sub, Provider: provider, Tokens: tokens, GrantID: grant,
			ClientID: "app", ConnectedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	t.Run("accounts", func(t *testing.T) {
		if _, err := st.ConnectedAccount(ctx, "alice", "github"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("missing account: %v", err)
		}
		for _, a := range []*authserver.ConnectedAccount{
			acct("alice", "github", "t1", "g1"), acct("alice", "github", "t2", "g1"),
			acct("alice", "google", "t3", "g1"), acct("bob", "github", "t4", "g2"),
		} {
			if err := st.SaveConnectedAccount(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.ConnectedAccount(ctx, "alice", "github")
		if err != nil || got.Tokens != "t2" || got.GrantID != "g1" || got.ClientID != "app" || !got.ExpiresAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("replaced account = %+v, %v", got, err)
		}
		got.Tokens = "changed"
		if again, _ := st.ConnectedAccount(ctx, "alice", "github"); again.Tokens != "t2" {
			t.Error("a returned account shares memory with the store")
		}
		list, err := st.ConnectedAccountsOfGrant(ctx, "g1")
		if err != nil || len(list) != 2 {
			t.Fatalf("accounts of g1 = %d, %v; want 2", len(list), err)
		}
		if list, _ := st.ConnectedAccountsOfGrant(ctx, "g-none"); len(list) != 0 {
			t.Errorf("accounts of an unknown grant = %d", len(list))
		}
		// A delete naming older tokens leaves the newer connection.
		if err := st.DeleteConnectedAccount(ctx, acct("alice", "github", "t1", "g1")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ConnectedAccount(ctx, "alice", "github"); err != nil {
			t.Fatalf("a stale delete removed the account: %v", err)
		}
		if err := st.DeleteConnectedAccount(ctx, acct("alice", "github", "t2", "g1")); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ConnectedAccount(ctx, "alice", "github"); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("deleted account: %v", err)
		}
		if err := st.DeleteConnectedAccount(ctx, acct("alice", "github", "t2", "g1")); err != nil {
			t.Fatalf("deleting a missing account: %v", err)
		}
		if b, err := st.ConnectedAccount(ctx, "bob", "github"); err != nil || b.Tokens != "t4" {
			t.Fatalf("another user's account: %+v, %v", b, err)
		}
	})
	ticket := func(id string, ttl time.Duration) *authserver.ConnectTicket {
		return &authserver.ConnectTicket{ID: id, Kind: authserver.TicketRef, Provider: "github", Subject: "alice",
			Caller: "rs", ClientID: "app", GrantID: "g1", BrowserHash: "bh", ExpiresAt: now.Add(ttl)}
	}
	yes := func(*authserver.ConnectTicket) bool { return true }
	t.Run("tickets", func(t *testing.T) {
		if _, err := st.ConnectTicket(ctx, "connect-ref.missing", now); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("missing ticket: %v", err)
		}
		if err := st.SaveConnectTicket(ctx, ticket("connect-ref.a", time.Minute)); err != nil {
			t.Fatal(err)
		}
		for range 2 { // reading does not use it up
			got, err := st.ConnectTicket(ctx, "connect-ref.a", now)
			if err != nil || got.Subject != "alice" || got.GrantID != "g1" || got.BrowserHash != "bh" {
				t.Fatalf("ticket = %+v, %v", got, err)
			}
			got.Subject = "mallory"
		}
		if _, err := st.ConnectTicket(ctx, "connect-ref.a", now.Add(time.Minute)); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("ticket read at its expiry: %v", err)
		}
		if _, err := st.TakeConnectTicket(ctx, "connect-ref.a", now.Add(time.Minute), yes); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("ticket taken at its expiry: %v", err)
		}
		no := func(t *authserver.ConnectTicket) bool { t.Subject = "mallory"; return false }
		if _, err := st.TakeConnectTicket(ctx, "connect-ref.a", now, no); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("ticket taken though match refused: %v", err)
		}
		got, err := st.TakeConnectTicket(ctx, "connect-ref.a", now, yes)
		if err != nil || got.Subject != "alice" {
			t.Fatalf("take = %+v, %v", got, err)
		}
		if _, err := st.TakeConnectTicket(ctx, "connect-ref.a", now, yes); !errors.Is(err, authserver.ErrNotFound) {
			t.Fatalf("ticket taken twice: %v", err)
		}
	})
	t.Run("ticket taken once by concurrent callers", func(t *testing.T) {
		if err := st.SaveConnectTicket(ctx, ticket("connect-ref.race", time.Minute)); err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				if _, err := st.TakeConnectTicket(ctx, "connect-ref.race", now, yes); err == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d callers took the ticket, want 1", wins.Load())
		}
	})
	t.Run("references per subject", func(t *testing.T) {
		ref := func(sub string, i int) *authserver.ConnectTicket {
			return &authserver.ConnectTicket{ID: fmt.Sprintf("connect-ref.%s-%02d", sub, i), Kind: authserver.TicketRef,
				Provider: "github", Subject: sub, ExpiresAt: now.Add(time.Minute + time.Duration(i)*time.Second)}
		}
		live := func(id string) bool {
			_, err := st.ConnectTicket(ctx, id, now)
			if err != nil && !errors.Is(err, authserver.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		const max, extra = authserver.MaxConnectRefsPerSubject, 5
		login := &authserver.ConnectTicket{ID: "connect-login.dave", Kind: authserver.TicketLogin, Ref: "connect-ref.dave-00",
			Provider: "github", Subject: "dave", ExpiresAt: now.Add(time.Minute)}
		for _, tk := range []*authserver.ConnectTicket{login, ref("erin", 0)} {
			if err := st.SaveConnectTicket(ctx, tk); err != nil {
				t.Fatal(err)
			}
		}
		for i := range max + extra {
			if err := st.SaveConnectTicket(ctx, ref("dave", i)); err != nil {
				t.Fatalf("reference %d: %v", i, err)
			}
		}
		for i := range max + extra {
			if want := i >= extra; live(ref("dave", i).ID) != want {
				t.Errorf("reference %d stored: %v, want %v (the oldest are displaced)", i, !want, want)
			}
		}
		if !live(ref("erin", 0).ID) || !live(login.ID) {
			t.Error("another user's reference, or a ticket of another kind, was displaced")
		}
		// A reference taken frees its place: the next displaces nothing.
		if _, err := st.TakeConnectTicket(ctx, ref("dave", max+extra-1).ID, now, yes); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveConnectTicket(ctx, ref("dave", max+extra)); err != nil {
			t.Fatal(err)
		}
		if !live(ref("dave", extra).ID) || !live(ref("dave", max+extra).ID) {
			t.Error("a reference was displaced though its user had room")
		}
		if err := st.SaveConnectTicket(ctx, ref("dave", max+extra+1)); err != nil {
			t.Fatal(err)
		}
		if live(ref("dave", extra).ID) || !live(ref("dave", extra+1).ID) {
			t.Error("the oldest reference was not the one displaced")
		}
	})
	t.Run("sweep", func(t *testing.T) {
		if err := st.SaveConnectedAccount(ctx, acct("carol", "github", "t9", "g9")); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveConnectTicket(ctx, ticket("connect-ref.old", time.Minute)); err != nil {
			t.Fatal(err)
		}
		if !sweep(t, now.Add(2*time.Hour), st) {
			t.Skip("the store is no Sweeper")
		}
		if _, err := st.ConnectedAccount(ctx, "carol", "github"); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("expired account after the sweep: %v", err)
		}
		if _, err := st.TakeConnectTicket(ctx, "connect-ref.old", now, yes); !errors.Is(err, authserver.ErrNotFound) {
			t.Errorf("expired ticket after the sweep: %v", err)
		}
	})
}
