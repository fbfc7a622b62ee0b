package pgstore

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/storagetest"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Compile-time checks of the optional interfaces, which the conformance
// checks skip for a store without them.
var (
	_ authserver.RefreshTokenUser = (*Store)(nil)
	_ authserver.Sweeper          = (*Store)(nil)
)

// testKEK is the key-encryption key of the stores in tests.
var testKEK = bytes.Repeat([]byte{7}, 32)

// openTest opens a store on a new database of pg.
func openTest(t testing.TB, pg *testdb.Postgres) *Store {
	t.Helper()
	st, err := Open(context.Background(), pg.NewDatabase(t), Config{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestStorage runs the storage conformance checks on PostgreSQL, each
// group on a new database.
func TestStorage(t *testing.T) {
	pg := testdb.StartPostgres(t)
	storagetest.Run(t, func(t *testing.T) authserver.Storage { return openTest(t, pg).Storage() })
}

// newSigningKey returns a new ES256 signing key.
func newSigningKey(t *testing.T) *authserver.SigningKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kid := rand.Text()
	jwk, err := jose.JSONWebKey{Key: priv, KeyID: kid, Algorithm: "ES256", Use: "sig"}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return &authserver.SigningKey{ID: kid, Algorithm: "ES256", PrivateJWK: jwk, CreatedAt: now, ActiveAt: now}
}

// TestSealsKeys: the database never holds a signing key's
// private part in the clear, and a store with another key-encryption key
// refuses to use it rather than skip it.
func TestSealsKeys(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	url := pg.NewDatabase(t)
	st, err := Open(ctx, url, Config{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := newSigningKey(t)
	if err := st.SaveSigningKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := st.pool.QueryRow(ctx, "SELECT sealed_jwk FROM signing_keys").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, k.PrivateJWK) || bytes.Contains(raw, []byte(`"d"`)) {
		t.Fatal("the stored key holds the private JWK in the clear")
	}
	other, err := Open(ctx, url, Config{KeyEncryptionKey: bytes.Repeat([]byte{8}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SigningKeys(ctx); err == nil {
		t.Fatal("a store with another key-encryption key read the keys")
	}
	rotated, err := Open(ctx, url, Config{KeyEncryptionKey: bytes.Repeat([]byte{8}, 32), OldKeyEncryptionKeys: [][]byte{testKEK}})
	if err != nil {
		t.Fatal(err)
	}
	defer rotated.Close()
	if keys, err := rotated.SigningKeys(ctx); err != nil || len(keys) != 1 {
		t.Fatalf("with the old key in the ring: %d keys, %v", len(keys), err)
	}
	if _, err := Open(ctx, url, Config{}); !errors.Is(err, authserver.ErrConfig) {
		t.Fatalf("without a key-encryption key: %v, want ErrConfig", err)
	}
}

// TestSealedKeyBoundToID: a sealed key moved to another row
// (someone with write access to the database swapping two keys' sealed
// parts) does not open under that row's key ID.
func TestSealedKeyBoundToID(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	st, err := Open(ctx, pg.NewDatabase(t), Config{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for range 2 {
		if err := st.SaveSigningKey(ctx, newSigningKey(t)); err != nil {
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

// TestDatabaseDown: with the database stopped every call fails with
// temporarily_unavailable (never ErrNotFound, which callers would take as
// an answer), and the store works again once the database is back.
func TestDatabaseDown(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	st, err := Open(ctx, pg.NewDatabase(t), Config{KeyEncryptionKey: testKEK, QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.SaveGrant(ctx, &authserver.Grant{ID: "g", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	want := &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}
	calls := map[string]func() error{
		"Grant":      func() error { _, err := st.Grant(ctx, "g"); return err },
		"Code":       func() error { _, err := st.Code(ctx, "k"); return err },
		"RedeemCode": func() error { _, err := st.RedeemCode(ctx, "k", "g"); return err },
		"Rotate":     func() error { return st.RotateRefreshToken(ctx, "r", &authserver.RefreshToken{Key: "r2"}) },
		"Use": func() error {
			_, err := st.UseRefreshToken(ctx, authserver.RefreshUse{Key: "r", NextKey: "r2", ClientID: "c", Now: now})
			return err
		},
		"Revoked":    func() error { _, err := st.AccessTokenRevoked(ctx, "j"); return err },
		"SaveClient": func() error { return st.SaveClient(ctx, &authserver.Client{ID: "c"}) },
		"TakePending": func() error {
			_, err := st.TakePending(ctx, "p", now, func(*authserver.PendingAuthorization) bool { return true })
			return err
		},
		"SigningKeys": func() error { _, err := st.SigningKeys(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, want) {
			t.Errorf("%s with the database down: %v, want temporarily_unavailable", name, err)
		}
	}
	pg.Restart()
	if g, err := st.Grant(ctx, "g"); err != nil || g.ID != "g" {
		t.Fatalf("after restart: %+v, %v", g, err)
	}
}

// TestMigrationsConcurrent: replicas starting together on an
// empty database migrate it once, and a database from a newer binary is
// refused.
func TestMigrationsConcurrent(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	url := pg.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			st, err := Open(ctx, url, Config{KeyEncryptionKey: testKEK})
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
	st, err := Open(ctx, url, Config{KeyEncryptionKey: testKEK})
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
	if _, err := Open(ctx, url, Config{KeyEncryptionKey: testKEK}); err == nil {
		t.Fatal("opened a database whose schema is newer than this binary")
	}
}
