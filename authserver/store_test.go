package authserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// testKEK is the key-encryption key of the PostgreSQL stores in tests.
var testKEK = bytes.Repeat([]byte{7}, 32)

// openTestPostgres opens a store on the database at dbURL, or on a new
// database of pg when dbURL is empty.
func openTestPostgres(t testing.TB, pg *testdb.Postgres, dbURL string) *PostgresStore {
	t.Helper()
	if dbURL == "" {
		dbURL = pg.NewDatabase(t)
	}
	st, err := OpenPostgresStore(context.Background(), dbURL, PostgresConfig{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// storeKinds returns each store implementation, empty.
func storeKinds(t *testing.T) map[string]func(t *testing.T) Storage {
	var pgOnce sync.Once
	var pg *testdb.Postgres
	return map[string]func(t *testing.T) Storage{
		"memory": func(*testing.T) Storage { return NewMemoryStore().Storage() },
		"bolt": func(t *testing.T) Storage {
			b, err := OpenBoltStore(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b.Storage()
		},
		"postgres": func(*testing.T) Storage {
			pgOnce.Do(func() { pg = testdb.StartPostgres(t) })
			return openTestPostgres(t, pg, "").Storage()
		},
	}
}

// TestStoreContract runs the store contract against every implementation:
// misses are ErrNotFound, codes redeem once and refresh tokens rotate once
// even under concurrency, revocation sticks, pending authorizations are
// taken once and only by a matching request.
func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, open := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			t.Run("codes", func(t *testing.T) {
				if _, err := st.Codes.Code(ctx, "missing"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Code(missing) = %v", err)
				}
				if _, err := st.Codes.RedeemCode(ctx, "missing", "g"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("RedeemCode(missing) = %v", err)
				}
				c := &Code{Key: "k1", ClientID: "c", Scopes: []string{"a"}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
				if err := st.Codes.SaveCode(ctx, c); err != nil {
					t.Fatal(err)
				}
				var wins atomic.Int32
				var wg sync.WaitGroup
				for i := range 20 {
					wg.Go(func() {
						got, err := st.Codes.RedeemCode(ctx, "k1", "grant-"+string(rune('a'+i)))
						switch {
						case err == nil:
							wins.Add(1)
						case !errors.Is(err, ErrAlreadyUsed) || got == nil || got.RedeemedBy == "":
							t.Errorf("RedeemCode = %+v, %v", got, err)
						}
					})
				}
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("%d concurrent redemptions succeeded, want 1", wins.Load())
				}
				got, err := st.Codes.Code(ctx, "k1")
				if err != nil || got.RedeemedBy == "" || got.ClientID != "c" || got.Scopes[0] != "a" {
					t.Fatalf("Code = %+v, %v", got, err)
				}
			})
			t.Run("grants and refresh tokens", func(t *testing.T) {
				g := &Grant{ID: "g1", ClientID: "c", Subject: "u", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := st.Grants.SaveGrant(ctx, g); err != nil {
					t.Fatal(err)
				}
				if err := st.RefreshTokens.SaveRefreshToken(ctx, &RefreshToken{Key: "r0", GrantID: "g1", ExpiresAt: now.Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				var wins atomic.Int32
				var wg sync.WaitGroup
				for i := range 20 {
					wg.Go(func() {
						err := st.RefreshTokens.RotateRefreshToken(ctx, "r0",
							&RefreshToken{Key: "r1-" + string(rune('a'+i)), GrantID: "g1", ExpiresAt: now.Add(time.Hour)})
						switch {
						case err == nil:
							wins.Add(1)
						case !errors.Is(err, ErrAlreadyUsed):
							t.Errorf("RotateRefreshToken = %v", err)
						}
					})
				}
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("%d concurrent rotations succeeded, want 1", wins.Load())
				}
				if err := st.RefreshTokens.RotateRefreshToken(ctx, "missing", &RefreshToken{Key: "x"}); !errors.Is(err, ErrNotFound) {
					t.Fatalf("rotating a missing token: %v", err)
				}
				if rt, err := st.RefreshTokens.RefreshToken(ctx, "r0"); err != nil || !rt.Rotated || rt.GrantID != "g1" {
					t.Fatalf("RefreshToken = %+v, %v", rt, err)
				}
				if err := st.Grants.RevokeGrant(ctx, "g1"); err != nil {
					t.Fatal(err)
				}
				if err := st.Grants.RevokeGrant(ctx, "missing"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("RevokeGrant(missing) = %v", err)
				}
				if got, err := st.Grants.Grant(ctx, "g1"); err != nil || !got.Revoked || got.Subject != "u" {
					t.Fatalf("Grant = %+v, %v", got, err)
				}
			})
			t.Run("use refresh token", func(t *testing.T) { testUseRefreshToken(t, st, now) })
			t.Run("consents and revocations", func(t *testing.T) {
				if _, err := st.Consents.Consent(ctx, "u", "c"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Consent(missing) = %v", err)
				}
				if err := st.Consents.SaveConsent(ctx, &Consent{Subject: "u", ClientID: "c", Scopes: []string{"a"}, ExpiresAt: now.Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				if c, err := st.Consents.Consent(ctx, "u", "c"); err != nil || c.Scopes[0] != "a" {
					t.Fatalf("Consent = %+v, %v", c, err)
				}
				if ok, err := st.Revocations.AccessTokenRevoked(ctx, "j1"); ok || err != nil {
					t.Fatalf("AccessTokenRevoked before = %v, %v", ok, err)
				}
				for range 2 {
					if err := st.Revocations.RevokeAccessToken(ctx, "j1", now.Add(time.Hour)); err != nil {
						t.Fatal(err)
					}
				}
				if ok, err := st.Revocations.AccessTokenRevoked(ctx, "j1"); !ok || err != nil {
					t.Fatalf("AccessTokenRevoked after = %v, %v", ok, err)
				}
			})
			t.Run("pending", func(t *testing.T) {
				req := &authRequest{client: &Client{ID: "c", Kind: ClientDynamic, RedirectURIs: []string{"http://127.0.0.1/cb"}},
					redirectURI: "http://127.0.0.1/cb", state: "s", challenge: "ch", scopes: []string{"a"}}
				if err := st.Pending.SavePending(ctx, pendingRecord("p1", "csrf", "browser", req, now.Add(pendingTTL))); err != nil {
					t.Fatal(err)
				}
				for _, bad := range [][2]string{{"csrf", "other"}, {"other", "browser"}, {"csrf", ""}} {
					if _, err := st.Pending.TakePending(ctx, "p1", now, pendingMatcher(bad[0], bad[1])); !errors.Is(err, ErrNotFound) {
						t.Fatalf("TakePending with %q = %v, want ErrNotFound", bad, err)
					}
				}
				if _, err := st.Pending.TakePending(ctx, "p1", now.Add(pendingTTL), pendingMatcher("csrf", "browser")); !errors.Is(err, ErrNotFound) {
					t.Fatalf("TakePending after expiry = %v", err)
				}
				var wins atomic.Int32
				var wg sync.WaitGroup
				for range 10 {
					wg.Go(func() {
						p, err := st.Pending.TakePending(ctx, "p1", now, pendingMatcher("csrf", "browser"))
						switch {
						case err == nil:
							wins.Add(1)
							if r := p.request(); r.client.ID != "c" || r.state != "s" || r.scopes[0] != "a" {
								t.Errorf("request = %+v", r)
							}
						case !errors.Is(err, ErrNotFound):
							t.Errorf("TakePending = %v", err)
						}
					})
				}
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("%d takes succeeded, want 1", wins.Load())
				}
			})
			t.Run("clients and keys", func(t *testing.T) {
				if _, err := st.Clients.Client(ctx, "missing"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Client(missing) = %v", err)
				}
				if err := st.Clients.SaveClient(ctx, &Client{ID: "c1", Secret: "plain", SecretHash: "h", RedirectURIs: []string{"x"}}); err != nil {
					t.Fatal(err)
				}
				if c, err := st.Clients.Client(ctx, "c1"); err != nil || c.Secret != "" || c.SecretHash != "h" {
					t.Fatalf("Client = %+v, %v", c, err)
				}
				lk, err := generateSigningKey("ES256", now, now)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Keys.SaveSigningKey(ctx, &lk.meta); err != nil {
					t.Fatal(err)
				}
				lk.meta.RetireAt = now.Add(time.Hour)
				if err := st.Keys.SaveSigningKey(ctx, &lk.meta); err != nil {
					t.Fatal(err)
				}
				keys, err := st.Keys.SigningKeys(ctx)
				if err != nil || len(keys) != 1 || !bytes.Equal(keys[0].PrivateJWK, lk.meta.PrivateJWK) || !keys[0].RetireAt.Equal(now.Add(time.Hour)) {
					t.Fatalf("SigningKeys = %+v, %v", keys, err)
				}
				if err := st.Keys.DeleteSigningKey(ctx, lk.meta.ID); err != nil {
					t.Fatal(err)
				}
				if keys, err := st.Keys.SigningKeys(ctx); err != nil || len(keys) != 0 {
					t.Fatalf("after delete: %d keys, %v", len(keys), err)
				}
			})
			t.Run("sweep", func(t *testing.T) {
				sw, ok := st.Codes.(Sweeper)
				if !ok {
					t.Fatal("store is no Sweeper")
				}
				if err := sw.Sweep(ctx, now.Add(2*time.Hour)); err != nil {
					t.Fatal(err)
				}
				for _, err := range []error{
					func() error { _, err := st.Codes.Code(ctx, "k1"); return err }(),
					func() error { _, err := st.Grants.Grant(ctx, "g1"); return err }(),
					func() error { _, err := st.RefreshTokens.RefreshToken(ctx, "r0"); return err }(),
					func() error { _, err := st.Consents.Consent(ctx, "u", "c"); return err }(),
				} {
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("after sweep: %v, want ErrNotFound", err)
					}
				}
			})
		})
	}
}

// testUseRefreshToken checks [RefreshTokenUser] against its definition,
// RefreshUse.admits: it rotates exactly the tokens admits accepts, into
// the successor with the token's grant, client and expiry, returns the
// grant, and otherwise changes nothing; of concurrent uses one wins.
func testUseRefreshToken(t *testing.T, st Storage, now time.Time) {
	ctx := context.Background()
	user, ok := st.RefreshTokens.(RefreshTokenUser)
	if !ok {
		t.Fatalf("%T does not implement RefreshTokenUser", st.RefreshTokens)
	}
	hour := now.Add(time.Hour)
	for i, tc := range []struct {
		name    string
		grant   *Grant // nil: none saved
		token   RefreshToken
		use     RefreshUse
		revoked bool
	}{
		{name: "unbound", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{}},
		{name: "unbound, with a proof", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{JKT: "k"}},
		{name: "bound, its key", grant: &Grant{DPoPJKT: "k", ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{JKT: "k"}},
		{name: "bound, no proof", grant: &Grant{DPoPJKT: "k", ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{}},
		{name: "bound, another key", grant: &Grant{DPoPJKT: "k", ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{JKT: "x"}},
		{name: "another client", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{ClientID: "other"}},
		{name: "token expired", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: now}, use: RefreshUse{}},
		{name: "grant expired", grant: &Grant{ExpiresAt: now}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{}},
		{name: "grant revoked", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{}, revoked: true},
		{name: "no grant", token: RefreshToken{ExpiresAt: hour}, use: RefreshUse{}},
		{name: "rotated", grant: &Grant{ExpiresAt: hour}, token: RefreshToken{ExpiresAt: hour, Rotated: true}, use: RefreshUse{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "use-" + strconv.Itoa(i)
			tok := tc.token
			tok.Key, tok.GrantID, tok.ClientID, tok.IssuedAt = id+"-r0", id, "c", now.Add(-time.Minute)
			var g *Grant
			if tc.grant != nil {
				g = tc.grant
				g.ID, g.ClientID, g.Subject, g.Scopes, g.Resources, g.CreatedAt = id, "c", "u", []string{"a", "b"}, []string{"https://r.example/"}, now
				if err := st.Grants.SaveGrant(ctx, g); err != nil {
					t.Fatal(err)
				}
				if tc.revoked {
					if err := st.Grants.RevokeGrant(ctx, id); err != nil {
						t.Fatal(err)
					}
					g.Revoked = true
				}
			}
			if err := st.RefreshTokens.SaveRefreshToken(ctx, &tok); err != nil {
				t.Fatal(err)
			}
			u := tc.use
			u.Key, u.NextKey, u.ClientID, u.Now = tok.Key, id+"-r1", cmp.Or(u.ClientID, "c"), now
			want := u.admits(&tok, g)
			got, err := user.UseRefreshToken(ctx, u)
			if !want {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("UseRefreshToken = %+v, %v, want ErrNotFound", got, err)
				}
				if old, err := st.RefreshTokens.RefreshToken(ctx, tok.Key); err != nil || old.Rotated != tok.Rotated {
					t.Fatalf("refused token changed: %+v, %v", old, err)
				}
				if _, err := st.RefreshTokens.RefreshToken(ctx, u.NextKey); !errors.Is(err, ErrNotFound) {
					t.Fatalf("refused use saved a successor: %v", err)
				}
				return
			}
			if err != nil || got.ID != id || got.Subject != "u" || got.ClientID != "c" || got.DPoPJKT != g.DPoPJKT || got.Revoked ||
				strings.Join(got.Scopes, " ") != "a b" || len(got.Resources) != 1 || !got.ExpiresAt.Equal(g.ExpiresAt) {
				t.Fatalf("UseRefreshToken = %+v, %v", got, err)
			}
			if old, err := st.RefreshTokens.RefreshToken(ctx, tok.Key); err != nil || !old.Rotated {
				t.Fatalf("used token: %+v, %v", old, err)
			}
			next, err := st.RefreshTokens.RefreshToken(ctx, u.NextKey)
			if err != nil || next.Key != u.NextKey || next.GrantID != id || next.ClientID != "c" || next.Rotated ||
				!next.IssuedAt.Equal(now) || !next.ExpiresAt.Equal(tok.ExpiresAt) {
				t.Fatalf("successor = %+v, %v", next, err)
			}
			if _, err := user.UseRefreshToken(ctx, u); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second use = %v, want ErrNotFound", err)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		if err := st.Grants.SaveGrant(ctx, &Grant{ID: "use-c", ClientID: "c", ExpiresAt: hour}); err != nil {
			t.Fatal(err)
		}
		if err := st.RefreshTokens.SaveRefreshToken(ctx, &RefreshToken{Key: "use-c-r0", GrantID: "use-c", ClientID: "c", ExpiresAt: hour}); err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, err := user.UseRefreshToken(ctx, RefreshUse{Key: "use-c-r0", NextKey: "use-c-r1-" + strconv.Itoa(i), ClientID: "c", Now: now})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, ErrNotFound):
					t.Errorf("UseRefreshToken = %v", err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent uses succeeded, want 1", wins.Load())
		}
	})
}

// TestPostgresStoreSealsKeys: the database never holds a signing key's
// private part in the clear, and a store with another key-encryption key
// refuses to use it rather than skip it.
func TestPostgresStoreSealsKeys(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	url := pg.NewDatabase(t)
	st, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lk, err := generateSigningKey("ES256", time.Now(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveSigningKey(ctx, &lk.meta); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := st.pool.QueryRow(ctx, "SELECT sealed_jwk FROM signing_keys").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, lk.meta.PrivateJWK) || bytes.Contains(raw, []byte(`"d"`)) {
		t.Fatal("the stored key holds the private JWK in the clear")
	}
	other, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: bytes.Repeat([]byte{8}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SigningKeys(ctx); err == nil {
		t.Fatal("a store with another key-encryption key read the keys")
	}
	rotated, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: bytes.Repeat([]byte{8}, 32), OldKeyEncryptionKeys: [][]byte{testKEK}})
	if err != nil {
		t.Fatal(err)
	}
	defer rotated.Close()
	if keys, err := rotated.SigningKeys(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("with the old key in the ring: %d keys, %v", len(keys), err)
	}
	if _, err := OpenPostgresStore(ctx, url, PostgresConfig{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("without a key-encryption key: %v, want ErrConfig", err)
	}
}

// TestPostgresStoreSealedKeyBoundToID: a sealed key moved to another row
// (someone with write access to the database swapping two keys' sealed
// parts) does not open under that row's key ID.
func TestPostgresStoreSealedKeyBoundToID(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	st, err := OpenPostgresStore(ctx, pg.NewDatabase(t), PostgresConfig{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 2 {
		lk, err := generateSigningKey("ES256", time.Now(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveSigningKey(ctx, &lk.meta); err != nil {
			t.Fatal(err)
		}
	}
	if keys, err := st.SigningKeys(ctx); err != nil || len(keys) != 2 {
		t.Fatalf("before the swap: %d keys, %v", len(keys), err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE signing_keys AS a SET sealed_jwk = b.sealed_jwk
		FROM signing_keys AS b WHERE a.kid <> b.kid`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SigningKeys(ctx); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Fatalf("swapped sealed keys: %v, want a refusal", err)
	}
}

// TestPostgresStoreDown: with the database stopped every call fails with
// temporarily_unavailable (never ErrNotFound, which callers would take as
// an answer), and the store works again once the database is back.
func TestPostgresStoreDown(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	st, err := OpenPostgresStore(ctx, pg.NewDatabase(t), PostgresConfig{KeyEncryptionKey: testKEK, QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.SaveGrant(ctx, &Grant{ID: "g", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	unavailable := &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}
	calls := map[string]func() error{
		"Grant":      func() error { _, err := st.Grant(ctx, "g"); return err },
		"Code":       func() error { _, err := st.Code(ctx, "k"); return err },
		"RedeemCode": func() error { _, err := st.RedeemCode(ctx, "k", "g"); return err },
		"Rotate":     func() error { return st.RotateRefreshToken(ctx, "r", &RefreshToken{Key: "r2"}) },
		"Use": func() error {
			_, err := st.UseRefreshToken(ctx, RefreshUse{Key: "r", NextKey: "r2", ClientID: "c", Now: now})
			return err
		},
		"Revoked":    func() error { _, err := st.AccessTokenRevoked(ctx, "j"); return err },
		"SaveClient": func() error { return st.SaveClient(ctx, &Client{ID: "c"}) },
		"TakePending": func() error {
			_, err := st.TakePending(ctx, "p", now, func(*PendingAuthorization) bool { return true })
			return err
		},
		"SigningKeys": func() error { _, err := st.SigningKeys(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, unavailable) {
			t.Errorf("%s with the database down: %v, want temporarily_unavailable", name, err)
		}
	}
	pg.Restart()
	if g, err := st.Grant(ctx, "g"); err != nil || g.ID != "g" {
		t.Fatalf("after restart: %+v, %v", g, err)
	}
}

// TestPostgresMigrationsConcurrent: replicas starting together on an
// empty database migrate it once, and a database from a newer binary is
// refused.
func TestPostgresMigrationsConcurrent(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	url := pg.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			st, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: testKEK})
			if err == nil {
				st.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.pool.QueryRow(ctx, "SELECT count(*) FROM mcpauth_schema_migrations").Scan(&n); err != nil || n != len(ms) {
		t.Fatalf("%d migrations recorded, %v; want each of the %d once", n, err, len(ms))
	}
	if _, err := st.pool.Exec(ctx, "INSERT INTO mcpauth_schema_migrations (version, name) VALUES (99, 'future')"); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPostgresStore(ctx, url, PostgresConfig{KeyEncryptionKey: testKEK}); err == nil {
		t.Fatal("opened a database whose schema is newer than this binary")
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
		save("p"+strconv.Itoa(i), now.Add(pendingTTL))
	}
	save("new", now.Add(pendingTTL))
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
	save("long", now.Add(pendingTTL))
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

// TestStoreRecordsCopied: a store keeps its records apart from its
// callers' values. Changing a record after saving it, or one that a read
// returned, changes nothing stored: the next read returns the record as
// it was saved.
func TestStoreRecordsCopied(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, open := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			c := &Client{ID: "c1", RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"authorization_code"},
				AllowedScopes: []string{"s"}, DefaultScopes: []string{"s"}, AuthMethod: "none"}
			checkCopied(t, "client", c, func() error { return st.Clients.SaveClient(ctx, c) },
				func() (any, error) { return st.Clients.Client(ctx, "c1") },
				func(v any) {
					c := v.(*Client)
					c.RedirectURIs[0], c.GrantTypes[0], c.AllowedScopes[0], c.DefaultScopes[0], c.AuthMethod = "x", "x", "x", "x", "x"
				})
			code := &Code{Key: "k1", ClientID: "c1", Scopes: []string{"s"}, Resources: []string{"https://r.example"}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}
			checkCopied(t, "code", code, func() error { return st.Codes.SaveCode(ctx, code) },
				func() (any, error) { return st.Codes.Code(ctx, "k1") },
				func(v any) {
					c := v.(*Code)
					c.Scopes[0], c.Resources[0], c.ClientID, c.RedeemedBy = "x", "x", "x", "x"
				})
			g := &Grant{ID: "g1", ClientID: "c1", Subject: "u", Scopes: []string{"s"}, Resources: []string{"https://r.example"},
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			checkCopied(t, "grant", g, func() error { return st.Grants.SaveGrant(ctx, g) },
				func() (any, error) { return st.Grants.Grant(ctx, "g1") },
				func(v any) {
					g := v.(*Grant)
					g.Scopes[0], g.Resources[0], g.Subject, g.Revoked = "x", "x", "x", true
				})
			rt := &RefreshToken{Key: "r1", GrantID: "g1", ClientID: "c1", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
			checkCopied(t, "refresh token", rt, func() error { return st.RefreshTokens.SaveRefreshToken(ctx, rt) },
				func() (any, error) { return st.RefreshTokens.RefreshToken(ctx, "r1") },
				func(v any) {
					rt := v.(*RefreshToken)
					rt.GrantID, rt.Rotated = "x", true
				})
			cs := &Consent{Subject: "u", ClientID: "c1", RedirectURI: "https://a.example/cb", Scopes: []string{"s"},
				Resources: []string{"https://r.example"}, Browsers: []string{"b1"}, GrantedAt: now, ExpiresAt: now.Add(time.Hour)}
			checkCopied(t, "consent", cs, func() error { return st.Consents.SaveConsent(ctx, cs) },
				func() (any, error) { return st.Consents.Consent(ctx, "u", "c1") },
				func(v any) {
					cs := v.(*Consent)
					cs.Scopes[0], cs.Resources[0], cs.Browsers[0], cs.RedirectURI = "x", "x", "x", "x"
				})
			k := &SigningKey{ID: "kid1", Algorithm: "ES256", PrivateJWK: []byte(`{"kty":"EC"}`), CreatedAt: now, ActiveAt: now}
			checkCopied(t, "signing key", k, func() error { return st.Keys.SaveSigningKey(ctx, k) },
				func() (any, error) {
					keys, err := st.Keys.SigningKeys(ctx)
					if err != nil || len(keys) != 1 {
						return nil, fmt.Errorf("%d keys, %w", len(keys), err)
					}
					return keys[0], nil
				},
				func(v any) {
					k := v.(*SigningKey)
					k.PrivateJWK[0], k.Algorithm = 'x', "x"
				})
			ut := &UpstreamTokens{ID: "u1", GrantID: "g1", Sealed: []byte{1, 2, 3}, Version: 1, ExpiresAt: now.Add(time.Hour)}
			checkCopied(t, "upstream tokens", ut, func() error { return st.UpstreamTokens.SaveUpstreamTokens(ctx, ut) },
				func() (any, error) { return st.UpstreamTokens.UpstreamTokens(ctx, "u1") },
				func(v any) {
					ut := v.(*UpstreamTokens)
					ut.Sealed[0], ut.GrantID, ut.LeaseOwner = 9, "x", "x"
				})
		})
	}
}

// checkCopied saves rec, changes it, reads it back, changes what the read
// returned and reads it again: both reads must equal rec as it was saved.
func checkCopied(t *testing.T, what string, rec any, save func() error, get func() (any, error), change func(any)) {
	t.Helper()
	want, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := save(); err != nil {
		t.Fatalf("%s: save: %v", what, err)
	}
	change(rec)
	for _, when := range []string{"after changing the saved record", "after changing the record read"} {
		got, err := get()
		if err != nil {
			t.Fatalf("%s: read %s: %v", what, when, err)
		}
		if data, _ := json.Marshal(got); !bytes.Equal(data, want) {
			t.Errorf("%s: read %s:\n%s\nwant\n%s", what, when, data, want)
		}
		change(got)
	}
}
