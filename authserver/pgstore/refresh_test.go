package pgstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/testdb"
)

// gateRefreshes makes st's refresh batches wait for the test: each batch
// sends its uses on started, then runs its statement when release gets a
// value.
func gateRefreshes(st *Store) (started chan []authserver.RefreshUse, release chan struct{}) {
	started, release = make(chan []authserver.RefreshUse, 10), make(chan struct{})
	st.refreshes = newBatcher(refreshBatchMax, refreshQueueMax, func(ctx context.Context, uses []authserver.RefreshUse) ([]*authserver.Grant, error) {
		started <- slices.Clone(uses)
		<-release
		return st.useRefreshTokens(ctx, uses)
	})
	return started, release
}

// saveRefreshFamily saves a grant id for client c, bound to jkt if not
// empty, and its refresh token id+"-r0".
func saveRefreshFamily(t *testing.T, st *Store, id, jkt string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	hour := now.Add(time.Hour)
	if err := st.SaveGrant(ctx, &authserver.Grant{ID: id, ClientID: "c", Subject: "u", DPoPJKT: jkt, ExpiresAt: hour}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveRefreshToken(ctx, &authserver.RefreshToken{Key: id + "-r0", GrantID: id, ClientID: "c", ExpiresAt: hour}); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshBatch: uses queued while a statement is in flight go in one
// statement, and each gets its own answer: the tokens the rules accept rotate,
// the others (another client, another DPoP key, a second use of a token of the
// same batch) are authserver.ErrNotFound and change nothing.
func TestRefreshBatch(t *testing.T) {
	t.Parallel()
	pg := testdb.StartPostgres(t)
	st := openTest(t, pg)
	started, release := gateRefreshes(st)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for i := range 8 {
		jkt := ""
		if i%2 == 1 {
			jkt = "k" + strconv.Itoa(i)
		}
		saveRefreshFamily(t, st, "b"+strconv.Itoa(i), jkt, now)
	}
	use := func(i int, client, jkt, next string) authserver.RefreshUse {
		return authserver.RefreshUse{Key: "b" + strconv.Itoa(i) + "-r0", NextKey: next, ClientID: client, JKT: jkt, Now: now}
	}
	queued := []struct {
		use  authserver.RefreshUse
		wins bool
	}{
		{use(1, "c", "k1", "b1-r1"), true},
		{use(2, "c", "", "b2-r1"), true},
		{use(2, "c", "", "b2-r1-again"), false}, // the same token again in one batch
		{use(3, "c", "x", "b3-r1"), false},      // another DPoP key
		{use(4, "other", "", "b4-r1"), false},   // another client
		{use(5, "c", "k5", "b5-r1"), true},
		{use(6, "c", "k", "b6-r1"), true}, // a proof for an unbound grant
		{use(7, "c", "", "b7-r1"), false}, // no proof for a bound grant
	}
	ctx := context.Background()
	type result struct {
		g   *authserver.Grant
		err error
	}
	results := make([]result, len(queued))
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := st.UseRefreshToken(ctx, use(0, "c", "", "b0-r1")); err != nil {
			t.Errorf("first use: %v", err)
		}
	})
	<-started
	for i, q := range queued {
		wg.Go(func() {
			g, err := st.UseRefreshToken(ctx, q.use)
			results[i] = result{g, err}
		})
		waitQueued(st.refreshes, i+1)
	}
	release <- struct{}{}
	batch := <-started
	if len(batch) != len(queued) {
		t.Fatalf("second batch holds %d uses, want %d", len(batch), len(queued))
	}
	release <- struct{}{}
	wg.Wait()
	for i, q := range queued {
		r := results[i]
		if !q.wins {
			if !errors.Is(r.err, authserver.ErrNotFound) {
				t.Errorf("use %d (%s): %+v, %v, want authserver.ErrNotFound", i, q.use.NextKey, r.g, r.err)
			}
			if _, err := st.RefreshToken(ctx, q.use.NextKey); !errors.Is(err, authserver.ErrNotFound) {
				t.Errorf("use %d (%s) saved a successor: %v", i, q.use.NextKey, err)
			}
			continue
		}
		if r.err != nil || r.g.ID != q.use.Key[:2] || r.g.Subject != "u" {
			t.Errorf("use %d (%s): %+v, %v", i, q.use.NextKey, r.g, r.err)
		}
		next, err := st.RefreshToken(ctx, q.use.NextKey)
		if err != nil || next.GrantID != q.use.Key[:2] || next.ClientID != "c" || next.Rotated || !next.IssuedAt.Equal(now) {
			t.Errorf("use %d: successor %+v, %v", i, next, err)
		}
	}
	for _, k := range []string{"b3-r0", "b4-r0", "b7-r0"} {
		if old, err := st.RefreshToken(ctx, k); err != nil || old.Rotated {
			t.Errorf("refused %s: %+v, %v", k, old, err)
		}
	}
	want := make([]uint64, refreshBatchMax+1)
	want[1], want[len(queued)] = 1, 1
	if got := st.RefreshBatchSizes(); !slices.Equal(got, want) {
		t.Errorf("RefreshBatchSizes = %v, want one statement of 1 and one of %d", got, len(queued))
	}
}

// TestRefreshBatchCancel: a use whose context ends while it waits
// for the next statement returns the context's error and rotates nothing;
// the uses queued with it still go.
func TestRefreshBatchCancel(t *testing.T) {
	t.Parallel()
	pg := testdb.StartPostgres(t)
	st := openTest(t, pg)
	started, release := gateRefreshes(st)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, id := range []string{"x0", "x1", "x2"} {
		saveRefreshFamily(t, st, id, "", now)
	}
	use := func(id string) authserver.RefreshUse {
		return authserver.RefreshUse{Key: id + "-r0", NextKey: id + "-r1", ClientID: "c", Now: now}
	}
	bg := context.Background()
	var wg sync.WaitGroup
	var errs [3]error
	wg.Go(func() { _, errs[0] = st.UseRefreshToken(bg, use("x0")) })
	<-started
	ctx, cancel := context.WithCancel(bg)
	cancelled := make(chan error)
	go func() {
		_, err := st.UseRefreshToken(ctx, use("x1"))
		cancelled <- err
	}()
	waitQueued(st.refreshes, 1)
	wg.Go(func() { _, errs[2] = st.UseRefreshToken(bg, use("x2")) })
	waitQueued(st.refreshes, 2)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled use = %v, want context.Canceled", err)
	}
	release <- struct{}{}
	if got := <-started; len(got) != 1 || got[0].Key != "x2-r0" {
		t.Fatalf("next batch %+v, want x2 alone", got)
	}
	release <- struct{}{}
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("uses queued with the cancelled one: %v, %v", errs[0], errs[2])
	}
	if old, err := st.RefreshToken(bg, "x1-r0"); err != nil || old.Rotated {
		t.Fatalf("cancelled use rotated its token: %+v, %v", old, err)
	}
}

// openOneConn opens a PostgreSQL store of one connection on a new
// database, so that every statement runs in one session and its cached
// plans are the ones a test reads.
func openOneConn(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), testdb.StartPostgres(t).NewDatabase(t),
		Config{KeyEncryptionKey: testKEK, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// No automatic ANALYZE: it would replace cached plans with ones made on
	// fresh statistics, and the tests would no longer test their case.
	if _, err := st.pool.Exec(context.Background(), `ALTER TABLE grants SET (autovacuum_enabled = false);
		ALTER TABLE refresh_tokens SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	return st
}

// fillRefreshTables adds n grants, each with one refresh token, expiring
// at exp.
func fillRefreshTables(t *testing.T, st *Store, n int, exp time.Time) {
	t.Helper()
	for _, sql := range []string{
		`INSERT INTO grants (id, data, expires_at)
			SELECT 'f' || n, jsonb_build_object('id', 'f' || n), $1 FROM generate_series(1, $2::int) AS n`,
		`INSERT INTO refresh_tokens (key, grant_id, data, expires_at)
			SELECT 'f' || n || '-r0', 'f' || n, jsonb_build_object('key', 'f' || n || '-r0'), $1 FROM generate_series(1, $2::int) AS n`,
	} {
		if _, err := st.pool.Exec(context.Background(), sql, exp, n); err != nil {
			t.Fatal(err)
		}
	}
}

// useFamily saves the refresh family id and uses its first token once.
func useFamily(t *testing.T, st *Store, id string, now time.Time) {
	t.Helper()
	saveRefreshFamily(t, st, id, "", now)
	if _, err := st.UseRefreshToken(context.Background(), authserver.RefreshUse{Key: id + "-r0", NextKey: id + "-r1", ClientID: "c", Now: now}); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshGenericPlan: after its first executions on a
// connection, the refresh statement runs on one cached generic plan
// instead of being planned again for every batch.
func TestRefreshGenericPlan(t *testing.T) {
	t.Parallel()
	st := openOneConn(t)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	// Tables of some size, with statistics, as in service: on nearly
	// empty ones any plan is cheap.
	fillRefreshTables(t, st, 5000, now.Add(time.Hour))
	if _, err := st.pool.Exec(ctx, "ANALYZE grants, refresh_tokens"); err != nil {
		t.Fatal(err)
	}
	const uses = 10
	for i := range uses {
		useFamily(t, st, "p"+strconv.Itoa(i), now)
	}
	var generic, custom int64
	// One connection, so the session of the statements above; the query
	// leaves itself out (its own text holds the pattern).
	err := st.pool.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%UPDATE refresh_tokens r SET rotated%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&generic, &custom)
	if err != nil {
		t.Fatal(err)
	}
	// plan_cache_mode auto: five custom plans, then the generic one.
	if custom > 5 || generic+custom != uses {
		t.Errorf("refresh statement: %d generic plans, %d custom plans; want at most 5 custom of %d", generic, custom, uses)
	}
}

// TestRefreshPlanOnGrownTables: a refresh statement first planned
// on nearly empty tables (a new database) still finds its rows through
// the indexes once the tables have grown, before any ANALYZE: no
// sequential scan of refresh_tokens or grants.
func TestRefreshPlanOnGrownTables(t *testing.T) {
	t.Parallel()
	st := openOneConn(t)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for i := range 10 { // the plans are made and cached on this one connection
		useFamily(t, st, "e"+strconv.Itoa(i), now)
	}
	fillRefreshTables(t, st, 20000, now.Add(time.Hour))
	seqScans := func() int64 {
		t.Helper()
		var n int64
		if _, err := st.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		err := st.pool.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables
			WHERE relname IN ('refresh_tokens', 'grants')`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := seqScans()
	for i := range 5 {
		useFamily(t, st, "g"+strconv.Itoa(i), now)
	}
	if after := seqScans(); after != before {
		t.Errorf("%d sequential scans of refresh_tokens or grants in 5 refreshes on grown tables, want none", after-before)
	}
}

// BenchmarkUseRefreshToken rotates one token chain, one refresh at a
// time: a statement and a durable commit per refresh, with the
// allocations of the store call (the arrays pgx encodes, the grant
// decoded from its JSON). The time is mostly the database's.
func BenchmarkUseRefreshToken(b *testing.B) {
	st := openTest(b, testdb.StartPostgres(b))
	now := time.Now().UTC()
	ctx := context.Background()
	hour := now.Add(time.Hour)
	g := &authserver.Grant{ID: "bench", ClientID: "c", Subject: "u", Scopes: []string{"mcp:tools"},
		Resources: []string{"https://mcp.example/"}, ExpiresAt: hour}
	if err := st.SaveGrant(ctx, g); err != nil {
		b.Fatal(err)
	}
	if err := st.SaveRefreshToken(ctx, &authserver.RefreshToken{Key: "bench-0", GrantID: g.ID, ClientID: "c", ExpiresAt: hour}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		u := authserver.RefreshUse{Key: "bench-" + strconv.Itoa(i), NextKey: "bench-" + strconv.Itoa(i+1), ClientID: "c", Now: now}
		if _, err := st.UseRefreshToken(ctx, u); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
