package testdb_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/mcpauth/mcpauth/internal/testdb"
)

// TestPostgresLifecycle: a database created on the server keeps committed
// rows across a stop and a restart, and connections fail while it is down.
func TestPostgresLifecycle(t *testing.T) {
	ctx := context.Background()
	pg := testdb.StartPostgres(t)
	url := pg.NewDatabase(t)
	exec := func(sql string) error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	if err := exec("SELECT 1"); err == nil {
		t.Fatal("query succeeded while the server is stopped")
	}
	pg.Restart()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var v int
	if err := c.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: %d, %v; want 42", v, err)
	}
}

// TestRedisLifecycle: the server answers, refuses while stopped, and comes
// back empty (no persistence).
func TestRedisLifecycle(t *testing.T) {
	ctx := context.Background()
	r := testdb.StartRedis(t)
	opt, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET succeeded while the server is stopped")
	}
	r.Restart()
	if err := c.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("after restart: %v; want redis.Nil (no persistence)", err)
	}
}
