package testdb

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// process is one running server.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // set before done is closed
}

// syncBuffer collects a server's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProcess runs name with args, as owner when owner is not nil.
func startProcess(owner *account, name string, args ...string) (*process, error) {
	cmd := exec.Command(name, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(owner)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end with sig and waits; after grace it kills it.
func (p *process) stop(sig os.Signal, grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// run runs a short command to completion, as owner when not nil.
func run(t testing.TB, owner *account, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = sysProcAttr(owner)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testdb: %s: %v\n%s", name, err, out)
	}
}

// waitReady polls ready until it succeeds, the process ends, or 30 s pass.
func (p *process) waitReady(ready func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("server exited: %v\n%s", p.err, p.out.String())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after 30s: %v\n%s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
