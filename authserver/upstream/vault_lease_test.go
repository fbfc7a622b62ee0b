package upstream

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// sharedStores returns, for each store kind, a function that opens one
// store and returns what each replica gets of it: its own connection pool
// to one PostgreSQL database, or the same memory store or bbolt file (two
// servers in one process; each has its own in-process refresh
// coalescing, so only the store's lease keeps them apart).
func sharedStores() map[string]func(t *testing.T) func() authserver.Storage {
	return map[string]func(t *testing.T) func() authserver.Storage{
		"memory": func(*testing.T) func() authserver.Storage {
			m := authserver.NewMemoryStore()
			return m.Storage
		},
		"bolt": func(t *testing.T) func() authserver.Storage {
			return openTestBolt(t).Storage
		},
		"postgres": func(t *testing.T) func() authserver.Storage {
			pg := testdb.StartPostgres(t)
			dbURL := pg.NewDatabase(t)
			return func() authserver.Storage { return openTestPostgres(t, pg, dbURL).Storage() }
		},
	}
}

// vaultReplicas starts two servers with the token vault on the storage
// that shared hands out, logging users in at one fake provider whose
// upstream tokens last ttl.
func vaultReplicas(t *testing.T, shared func() authserver.Storage, ttl time.Duration, mutate func(*testConfig)) (*replicas, *fakeUpstreamTokens) {
	t.Helper()
	vt := newFakeUpstreamTokens(ttl)
	var p *fakeProvider
	r := newReplicasWith(t, 2, shared, func(c *testConfig) {
		if p == nil {
			p = newFakeProvider(t, c.Now)
			p.vaultTokens = vt
		}
		withUpstream(c, p)
		withVault(c)
		if mutate != nil {
			mutate(c)
		}
	})
	return r, vt
}

// TestTokenVaultOneRefreshAcrossReplicas: two replicas share one store
// and the user's upstream access token has expired. Fifty times, both are
// asked for it at the same moment. The provider, which refuses a refresh
// token used twice, sees exactly one refresh per round and never two at
// once, and both callers get the token that refresh returned.
func TestTokenVaultOneRefreshAcrossReplicas(t *testing.T) {
	for name, open := range sharedStores() {
		t.Run(name, func(t *testing.T) {
			r, vt := vaultReplicas(t, open(t), time.Minute, nil)
			vt.mu.Lock()
			vt.hold = 20 * time.Millisecond
			vt.mu.Unlock()
			tok := vaultLogin(t, r.harness, rsResource)
			const rounds = 50
			for round := range rounds {
				r.clock.Advance(2 * time.Minute)
				tok = r.refreshTokens(t, tok.RefreshToken)
				var got [2]tokenResult
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range got {
					wg.Go(func() {
						<-start
						got[i] = upstreamExchangeHeader(r.harness, tok.AccessToken, nil, at(i))
					})
				}
				close(start)
				wg.Wait()
				issued, refreshes := vt.state()
				if refreshes != round+1 {
					t.Fatalf("round %d: %d upstream refreshes in all, want %d", round, refreshes, round+1)
				}
				want := issued[len(issued)-2] // the access token of the last refresh
				for i, res := range got {
					if res.tok == nil || res.tok.AccessToken != want {
						t.Fatalf("round %d: replica %d: %d %s, want the refreshed token", round, i, res.status, res.body)
					}
				}
			}
			vt.mu.Lock()
			defer vt.mu.Unlock()
			if vt.maxInFlight != 1 || vt.refusals != 0 {
				t.Errorf("%d refreshes upstream at once, %d refused; want 1 and 0", vt.maxInFlight, vt.refusals)
			}
		})
	}
}

// TestTokenVaultLeaseHeld: while another replica holds the refresh lease
// (one that stopped without releasing it), a replica waits a bounded time
// and answers temporarily_unavailable, sending no refresh upstream; once
// the lease has expired by the server's clock it takes the lease and
// refreshes once.
func TestTokenVaultLeaseHeld(t *testing.T) {
	for name, open := range sharedStores() {
		t.Run(name, func(t *testing.T) {
			r, vt := vaultReplicas(t, open(t), time.Minute, func(c *testConfig) {
				// The lease: 500ms of waiting. The same timeout bounds the login's
				// and the final refresh's calls to the provider, which a
				// loaded machine can slow past a shorter one.
				c.Upstream.Timeout = 250 * time.Millisecond
			})
			tok := vaultLogin(t, r.harness, rsResource)
			r.clock.Advance(2 * time.Minute)
			tok = r.refreshTokens(t, tok.RefreshToken)
			ctx := context.Background()
			g := grantOf(t, r.harness, tok.AccessToken)
			st := r.store.UpstreamTokens
			rec, err := st.UpstreamTokens(ctx, g.UpstreamTokens)
			if err != nil {
				t.Fatal(err)
			}
			rec.LeaseOwner, rec.LeaseUntil, rec.Version = "stopped-replica", r.clock.Now().Add(time.Minute), rec.Version+1
			if err := st.SaveUpstreamTokens(ctx, rec); err != nil {
				t.Fatal(err)
			}
			for i := range r.servers {
				res := upstreamExchangeHeader(r.harness, tok.AccessToken, nil, at(i))
				wantError(t, res, http.StatusServiceUnavailable, oauthmeta.CodeTemporarilyUnavailable)
			}
			if _, refreshes := vt.state(); refreshes != 0 {
				t.Fatalf("%d refreshes upstream while another replica held the lease", refreshes)
			}
			r.clock.Advance(time.Minute)
			res := upstreamExchangeHeader(r.harness, tok.AccessToken, nil, at(1))
			issued, refreshes := vt.state()
			if res.tok == nil || res.tok.AccessToken != issued[len(issued)-2] || refreshes != 1 {
				t.Fatalf("after the lease expired: %d %s (%d refreshes)", res.status, res.body, refreshes)
			}
			rec, err = st.UpstreamTokens(ctx, g.UpstreamTokens)
			if err != nil || rec.LeaseOwner != "" || !rec.LeaseUntil.IsZero() {
				t.Fatalf("the lease outlived the refresh: %+v, %v", rec, err)
			}
		})
	}
}

// TestTokenVaultFamilyDeath: when our grant's refresh token family dies
// (a rotated refresh token used again, or the authorization code
// replayed), the grant's upstream tokens are deleted from the store.
func TestTokenVaultFamilyDeath(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(t *testing.T, h *harness, tok *oauthmeta.TokenResponse, code, verifier string) tokenResult
	}{
		{"refresh token reused", func(t *testing.T, h *harness, tok *oauthmeta.TokenResponse, _, _ string) tokenResult {
			h.refreshTokens(t, tok.RefreshToken)
			return h.token(refreshForm(tok.RefreshToken), "", "")
		}},
		{"authorization code replayed", func(_ *testing.T, h *harness, _ *oauthmeta.TokenResponse, code, verifier string) tokenResult {
			return h.exchange(code, verifier, publicCB, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := vaultHarness(t, time.Hour, nil)
			b := newBrowser(t, h)
			q, verifier := authParams(publicID, publicCB)
			q.Set("resource", rsResource)
			code := location(t, b.login(q)).Query().Get("code")
			first := h.exchange(code, verifier, publicCB, nil)
			if first.tok == nil {
				t.Fatalf("token: %d %s", first.status, first.body)
			}
			g := grantOf(t, h, first.tok.AccessToken)
			ctx := context.Background()
			if _, err := h.store.UpstreamTokens.UpstreamTokens(ctx, g.UpstreamTokens); err != nil {
				t.Fatalf("vault record before: %v", err)
			}
			wantError(t, tc.kill(t, h, first.tok, code, verifier), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
			if _, err := h.store.UpstreamTokens.UpstreamTokens(ctx, g.UpstreamTokens); !errors.Is(err, authserver.ErrNotFound) {
				t.Fatalf("the dead family's upstream tokens are still stored: %v", err)
			}
			if res := upstreamExchange(h, first.tok.AccessToken, nil); res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant {
				t.Fatalf("exchange after the family died: %d %s", res.status, res.body)
			}
		})
	}
}

// TestTokenVaultLeaseReleased: when the provider is unavailable the
// holder releases the lease (no replica has to wait for it to expire) and
// the exchange answers temporarily_unavailable; the next request
// refreshes.
func TestTokenVaultLeaseReleased(t *testing.T) {
	h, p, vt := vaultHarness(t, time.Minute, nil)
	tok := vaultLogin(t, h, rsResource)
	g := grantOf(t, h, tok.AccessToken)
	h.clock.Advance(2 * time.Minute)
	tok = h.refreshTokens(t, tok.RefreshToken)
	p.set(func(p *fakeProvider) { p.tokenMode = "down" })
	wantError(t, upstreamExchange(h, tok.AccessToken, nil), http.StatusServiceUnavailable, oauthmeta.CodeTemporarilyUnavailable)
	rec, err := h.store.UpstreamTokens.UpstreamTokens(context.Background(), g.UpstreamTokens)
	if err != nil || rec.LeaseOwner != "" || !rec.LeaseUntil.IsZero() {
		t.Fatalf("lease kept after a failed refresh: %+v, %v", rec, err)
	}
	p.set(func(p *fakeProvider) { p.tokenMode = "" })
	res := upstreamExchange(h, tok.AccessToken, nil)
	issued, refreshes := vt.state()
	if res.tok == nil || res.tok.AccessToken != issued[len(issued)-2] || refreshes != 1 {
		t.Fatalf("after the provider is back: %d %s (%d refreshes)", res.status, res.body, refreshes)
	}
}

// readHook calls onRead before each read of an upstream token record.
type readHook struct {
	authserver.UpstreamTokenStore
	onRead func()
}

func (r readHook) UpstreamTokens(ctx context.Context, id string) (*authserver.UpstreamTokens, error) {
	r.onRead()
	return r.UpstreamTokenStore.UpstreamTokens(ctx, id)
}

// TestTokenVaultLeaseExpiresWhileWaiting: a replica waiting on a lease
// left by a stopped replica takes it once it expires by the server's
// clock, and refreshes once.
func TestTokenVaultLeaseExpiresWhileWaiting(t *testing.T) {
	st := authserver.NewMemoryStore().Storage()
	var armed atomic.Bool
	var reads atomic.Int64
	var h *harness
	st.UpstreamTokens = readHook{UpstreamTokenStore: st.UpstreamTokens, onRead: func() {
		// The first read finds the lease held; the third is a wait's
		// second poll: the lease has expired by then.
		if armed.Load() && reads.Add(1) == 3 {
			h.clock.Advance(time.Minute)
		}
	}}
	h, _, vt := vaultHarness(t, time.Minute, func(c *testConfig) { c.Storage = st })
	tok := vaultLogin(t, h, rsResource)
	h.clock.Advance(2 * time.Minute)
	tok = h.refreshTokens(t, tok.RefreshToken)
	g := grantOf(t, h, tok.AccessToken)
	ctx := context.Background()
	rec, err := st.UpstreamTokens.UpstreamTokens(ctx, g.UpstreamTokens)
	if err != nil {
		t.Fatal(err)
	}
	rec.LeaseOwner, rec.LeaseUntil, rec.Version = "stopped-replica", h.clock.Now().Add(time.Minute), rec.Version+1
	if err := st.UpstreamTokens.SaveUpstreamTokens(ctx, rec); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	res := upstreamExchange(h, tok.AccessToken, nil)
	issued, refreshes := vt.state()
	if res.tok == nil || res.tok.AccessToken != issued[len(issued)-2] || refreshes != 1 {
		t.Fatalf("after waiting out the lease: %d %s (%d refreshes)", res.status, res.body, refreshes)
	}
	if n := reads.Load(); n < 4 {
		t.Fatalf("%d reads of the record: the exchange did not wait for the lease", n)
	}
}
