package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestPing: Ping answers while the database does, reports it unavailable
// (temporarily_unavailable) while it is stopped, and answers again after a
// restart.
func TestPing(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	st := openTest(t, pg)
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	if err := st.Ping(ctx); !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable}) {
		t.Fatalf("Ping with the database down: %v, want temporarily_unavailable", err)
	}
	pg.Restart()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
}
