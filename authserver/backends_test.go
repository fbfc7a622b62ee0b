package authserver

import (
	"io"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/internal/testdb"
)

// The stores the server tests run on besides memory. Packages boltstore
// and pgstore import this one, so these tests cannot import them; the
// external test package sets these before any test runs
// (backends_ext_test.go).
var (
	// OpenBoltBackend opens the bbolt file at path, creating it if
	// missing. It closes the store when t ends, or before when the caller
	// closes it.
	OpenBoltBackend func(t testing.TB, path string) (Storage, io.Closer)
	// OpenPostgresBackend opens a PostgreSQL store, with its own
	// connection pool, on the database at dbURL, and returns it with a
	// function that returns the one column of the rows a query selects.
	// It closes the store when t ends.
	OpenPostgresBackend func(t testing.TB, dbURL string) (st Storage, query func(sql string) [][]byte)
)

// openBolt opens a bbolt store in a new file.
func openBolt(t testing.TB) Storage {
	t.Helper()
	return openBoltAt(t, filepath.Join(t.TempDir(), "s.db"))
}

// openBoltAt opens the bbolt store in the file at path.
func openBoltAt(t testing.TB, path string) Storage {
	t.Helper()
	if OpenBoltBackend == nil {
		t.Fatal("no bbolt backend: backends_ext_test.go sets OpenBoltBackend")
	}
	st, _ := OpenBoltBackend(t, path)
	return st
}

// openTestPostgres opens a store on the database at dbURL, or on a new
// database of pg when dbURL is empty.
func openTestPostgres(t testing.TB, pg *testdb.Postgres, dbURL string) Storage {
	t.Helper()
	st, _ := openPostgresQuery(t, pg, dbURL)
	return st
}

// openPostgresQuery is openTestPostgres, with the store's query function.
func openPostgresQuery(t testing.TB, pg *testdb.Postgres, dbURL string) (Storage, func(string) [][]byte) {
	t.Helper()
	if OpenPostgresBackend == nil {
		t.Fatal("no PostgreSQL backend: backends_ext_test.go sets OpenPostgresBackend")
	}
	if dbURL == "" {
		dbURL = pg.NewDatabase(t)
	}
	return OpenPostgresBackend(t, dbURL)
}

// storeKinds returns each store implementation, empty.
func storeKinds(t *testing.T) map[string]func(t *testing.T) Storage {
	var pgOnce sync.Once
	var pg *testdb.Postgres
	return map[string]func(t *testing.T) Storage{
		"memory": func(*testing.T) Storage { return NewMemoryStore().Storage() },
		"bolt":   func(t *testing.T) Storage { return openBolt(t) },
		"postgres": func(*testing.T) Storage {
			pgOnce.Do(func() { pg = testdb.StartPostgres(t) })
			return openTestPostgres(t, pg, "")
		},
	}
}
