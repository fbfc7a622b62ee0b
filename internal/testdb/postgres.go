package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a throwaway PostgreSQL server. Its methods are safe for
// concurrent use.
type Postgres struct {
	t     testing.TB
	bin   string
	owner *account
	root  string // removed at the end
	data  string
	sock  string
	port  int

	mu   sync.Mutex
	proc *process
}

// StartPostgres initialises a cluster in a temporary directory and starts
// it on 127.0.0.1; it is stopped and removed when t ends.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		missing(t, "PostgreSQL (initdb, postgres)", "postgresql")
	}
	owner, err := serverAccount()
	if err != nil {
		missing(t, "a non-root account to run PostgreSQL ("+err.Error()+")", "postgresql")
	}
	root, err := os.MkdirTemp("", "mcpauth-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// The server user must be able to reach its directories inside root.
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	p := &Postgres{t: t, bin: bin, owner: owner, root: root,
		data: filepath.Join(root, "data"), sock: filepath.Join(root, "sock")}
	if err := os.Mkdir(p.sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := owner.chown(p.sock); err != nil {
		t.Fatal(err)
	}
	p.initCluster(t)
	t.Cleanup(p.Stop)
	for attempt := 0; ; attempt++ {
		p.port = freePort(t)
		err := p.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("testdb: starting PostgreSQL: %v", err)
		}
	}
	return p
}

// initCluster runs initdb once per binary directory and test process
// user, into a template kept in the temporary directory, and copies it:
// initdb takes seconds, a copy a fraction of that.
func (p *Postgres) initCluster(t testing.TB) {
	t.Helper()
	tmpl := filepath.Join(os.TempDir(), fmt.Sprintf("mcpauth-pg-template-%d-%x", os.Geteuid(), hashString(p.bin)))
	if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err != nil {
		staging, err := os.MkdirTemp(os.TempDir(), "mcpauth-pg-staging-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(staging)
		if err := os.Chmod(staging, 0o711); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(staging, "data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := p.owner.chown(dir); err != nil {
			t.Fatal(err)
		}
		run(t, p.owner, filepath.Join(p.bin, "initdb"), "-D", dir, "-U", "postgres", "-A", "trust",
			"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
		// Another test process may have won the race; either copy is good.
		if err := os.Rename(dir, tmpl); err != nil && !os.IsExist(err) && !isNotEmpty(err) {
			t.Fatal(err)
		}
	}
	cp := exec.Command("cp", "-a", tmpl, p.data)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("testdb: copying the cluster template: %v\n%s", err, out)
	}
}

func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// start runs the server on p.port and waits until it accepts connections.
func (p *Postgres) start() error {
	proc, err := startProcess(p.owner, filepath.Join(p.bin, "postgres"),
		"-D", p.data, "-k", p.sock, "-h", "127.0.0.1", "-p", strconv.Itoa(p.port),
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=16MB", "-c", "logging_collector=off")
	if err != nil {
		return err
	}
	err = proc.waitReady(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, p.URL())
		if err != nil {
			return err
		}
		return c.Close(ctx)
	})
	if err != nil {
		proc.stop(os.Kill, time.Second)
		return err
	}
	p.mu.Lock()
	p.proc = proc
	p.mu.Unlock()
	return nil
}

// URL is the connection URL of the "postgres" database.
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", hostPort(p.port))
}

// NewDatabase creates an empty database and returns its URL.
func (p *Postgres) NewDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("db_%d_%d", time.Now().UnixNano(), os.Getpid())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", hostPort(p.port), name)
}

// Stop shuts the server down (fast shutdown: open transactions are rolled
// back, committed data stays). It does nothing if the server is stopped.
func (p *Postgres) Stop() {
	p.mu.Lock()
	proc := p.proc
	p.proc = nil
	p.mu.Unlock()
	if proc != nil {
		proc.stop(os.Interrupt, 15*time.Second)
		// The postmaster's children share its process group; if the
		// postmaster had to be killed they would otherwise hold the port.
		killGroup(proc.cmd.Process.Pid)
	}
}

// Restart starts the stopped server again on the same port and data.
func (p *Postgres) Restart() {
	p.t.Helper()
	if err := p.start(); err != nil {
		p.t.Fatalf("testdb: restarting PostgreSQL: %v", err)
	}
}
