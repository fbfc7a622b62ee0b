package authserver_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/authserver/pgstore"
)

// testKEK is the key-encryption key of the PostgreSQL stores in tests.
var testKEK = bytes.Repeat([]byte{7}, 32)

// The server tests of package authserver run on these stores too; see
// backends_test.go.
func init() {
	authserver.OpenBoltBackend = func(t testing.TB, path string) (authserver.Storage, io.Closer) {
		t.Helper()
		st, err := boltstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st.Storage(), st
	}
	authserver.OpenPostgresBackend = func(t testing.TB, dbURL string) (authserver.Storage, func(string) [][]byte) {
		t.Helper()
		st, err := pgstore.Open(context.Background(), dbURL, pgstore.Config{KeyEncryptionKey: testKEK})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st.Storage(), func(sql string) [][]byte {
			t.Helper()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			rows, err := conn.Query(ctx, sql)
			if err != nil {
				t.Fatal(err)
			}
			out, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
}
