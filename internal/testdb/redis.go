package testdb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a throwaway Redis server without persistence. Its methods are
// safe for concurrent use.
type Redis struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu   sync.Mutex
	proc *process
}

// StartRedis starts redis-server on 127.0.0.1 with no persistence and its
// working directory in a temporary directory; it is stopped when t ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server", "redis-server")
	}
	r := &Redis{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(r.Stop)
	for attempt := 0; ; attempt++ {
		r.port = freePort(t)
		err := r.start()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("testdb: starting Redis: %v", err)
		}
	}
	return r
}

func (r *Redis) start() error {
	proc, err := startProcess(nil, r.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no")
	if err != nil {
		return err
	}
	err = proc.waitReady(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
		defer c.Close()
		return c.Ping(ctx).Err()
	})
	if err != nil {
		proc.stop(os.Kill, time.Second)
		return err
	}
	r.mu.Lock()
	r.proc = proc
	r.mu.Unlock()
	return nil
}

// Addr is host:port.
func (r *Redis) Addr() string { return hostPort(r.port) }

// URL is the redis:// URL of database 0.
func (r *Redis) URL() string { return fmt.Sprintf("redis://%s/0", r.Addr()) }

// Stop shuts the server down; nothing it held survives.
func (r *Redis) Stop() {
	r.mu.Lock()
	proc := r.proc
	r.proc = nil
	r.mu.Unlock()
	if proc != nil {
		proc.stop(os.Interrupt, 10*time.Second)
	}
}

// Restart starts the stopped server again on the same port, empty.
func (r *Redis) Restart() {
	r.t.Helper()
	if err := r.start(); err != nil {
		r.t.Fatalf("testdb: restarting Redis: %v", err)
	}
}
