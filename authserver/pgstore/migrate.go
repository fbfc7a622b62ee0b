package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles are the schema versions, applied in order of the number that
// starts each file name (0001_initial.sql is version 1).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockID is the advisory lock that serialises migrations of
// replicas starting at the same moment ("mcpauth" in ASCII).
const migrationLockID = 0x6d6370617574

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, f := range files {
		name := path.Base(f)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: migration %s: name must start with its version number", name)
		}
		body, err := migrationFiles.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migrations must be numbered 1, 2, 3…; %s is out of place", m.name)
		}
	}
	return out, nil
}

// migrate applies the migrations the database lacks, all in one
// transaction that holds an advisory lock: of several replicas starting
// together one migrates and the others then find nothing to do. A database
// whose schema is newer than this binary knows is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLockID)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS mcpauth_schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var current int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM mcpauth_schema_migrations").Scan(&current); err != nil {
			return err
		}
		if current > len(ms) {
			return fmt.Errorf("pgstore: the database schema is version %d; this binary knows up to %d", current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("pgstore: migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO mcpauth_schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
}
