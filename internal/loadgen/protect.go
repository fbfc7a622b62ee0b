package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ErrProtect wraps the errors of starting or stopping an mcpauth protect
// child process.
var ErrProtect = errors.New("loadgen: mcpauth protect")

// raceMarker is the line the race detector prints for each data race.
const raceMarker = "WARNING: DATA RACE"

// ProtectConfig configures StartProtect.
type ProtectConfig struct {
	// Binary is the mcpauth executable. REQUIRED.
	Binary string
	// Addr is the proxy's listen address, a 127.0.0.1 or ::1 host and
	// port. REQUIRED (FreeLoopbackAddr picks one).
	Addr string
	// Upstream, Issuer and Resource are passed as --upstream, --issuer and
	// --resource (all on loopback; --insecure-http is always given).
	// REQUIRED.
	Upstream, Issuer, Resource string
	// LogLevel is --log-level. Empty means "warn" (a log line per refused
	// request would measure the terminal, not the proxy).
	LogLevel string
	// Ready bounds the wait for the "listening on" line. Zero means 30 s.
	Ready time.Duration
}

// CommandConfig configures StartCommand.
type CommandConfig struct {
	// Binary is the executable and Args its arguments. Binary is REQUIRED.
	Binary string
	Args   []string
	// Ready bounds the wait for the child's "listening on" line on stdout.
	// Zero means 30 s.
	Ready time.Duration
	// Env are more KEY=VALUE environment variables for the child, after
	// this process's own.
	Env []string
	// ReadyURL, if set, is a loopback http URL (a health endpoint) that
	// marks the child ready once a GET answers 200, instead of the
	// "listening on" line, for a program that prints none.
	ReadyURL string
}

// Protect is a running mcpauth protect child process. Stop ends it; its
// methods are safe for concurrent use.
type Protect struct {
	// Ready is the "listening on" line the child printed.
	Ready string

	cmd     *exec.Cmd
	done    chan struct{} // closed when the child has exited and its output is read
	waitErr error
	races   atomic.Int64
	mu      sync.Mutex
	tail    []string // the last lines of stderr, for error messages
	stopped sync.Once
}

// FreeLoopbackAddr returns a 127.0.0.1 address with a port that was free
// a moment ago (another process may take it before the child binds it).
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// BuildMcpauth builds ./cmd/mcpauth of this module into dir (with -race if
// race) and returns the executable's path. It runs the go command.
func BuildMcpauth(ctx context.Context, dir string, race bool) (string, error) {
	return BuildMcpauthIn(ctx, "", dir, race)
}

// BuildMcpauthIn is BuildMcpauth for the module checked out in src (a git
// worktree of another revision, say); "" means the current directory's
// module.
func BuildMcpauthIn(ctx context.Context, src, dir string, race bool) (string, error) {
	out, err := filepath.Abs(filepath.Join(dir, "mcpauth"))
	if err != nil {
		return "", err
	}
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "-o", out, "github.com/mcpauth/mcpauth/cmd/mcpauth")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go %s: %v\n%s", ErrProtect, strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// StartProtect starts `mcpauth protect` and waits until it prints its
// "listening on" line. On error the child, if started, is stopped.
func StartProtect(ctx context.Context, cfg ProtectConfig) (*Protect, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if cfg.Binary == "" || cfg.Upstream == "" || cfg.Issuer == "" || cfg.Resource == "" || err != nil || !oauthmeta.IsLoopbackHost(host) {
		return nil, errors.Join(ErrConfig, errors.New("loadgen: protect needs Binary, a loopback Addr, Upstream, Issuer and Resource"))
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	args := []string{"protect", "--addr", cfg.Addr, "--upstream", cfg.Upstream, "--issuer", cfg.Issuer,
		"--resource", cfg.Resource, "--insecure-http", "--log-level", cfg.LogLevel}
	return StartCommand(ctx, CommandConfig{Binary: cfg.Binary, Args: args, Ready: cfg.Ready})
}

// StartCommand starts a server process (a proxy to compare with mcpauth
// protect) and waits until it prints a line starting with "listening on "
// on stdout (or, with ReadyURL, until that URL answers 200). Its stderr is read for data-race reports and kept in Tail. On
// error the child, if started, is stopped.
func StartCommand(ctx context.Context, cfg CommandConfig) (*Protect, error) {
	if cfg.Binary == "" {
		return nil, errors.Join(ErrConfig, errors.New("loadgen: a command needs a Binary"))
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 30 * time.Second
	}
	if cfg.ReadyURL != "" {
		if u, err := url.Parse(cfg.ReadyURL); err != nil || u.Scheme != "http" || !oauthmeta.IsLoopbackHost(u.Hostname()) {
			return nil, errors.Join(ErrConfig, fmt.Errorf("loadgen: ReadyURL %q: want an http URL on loopback", cfg.ReadyURL))
		}
	}
	cmd := exec.Command(cfg.Binary, cfg.Args...)
	cmd.Env = append(append(os.Environ(), "GORACE=halt_on_error=0"), cfg.Env...)
	setParentDeathSignal(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtect, err)
	}
	p := &Protect{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	lineReady := ready
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	if cfg.ReadyURL != "" {
		lineReady = nil
		go pollReady(pollCtx, cfg.ReadyURL, ready)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.readStdout(stdout, lineReady) }()
	go func() { defer readers.Done(); p.readStderr(stderr) }()
	go func() {
		readers.Wait()
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	timer := time.NewTimer(cfg.Ready)
	defer timer.Stop()
	select {
	case p.Ready = <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%w: exited before listening (%v): %s", ErrProtect, p.waitErr, p.Tail())
	case <-timer.C:
		err = fmt.Errorf("%w: not ready (no \"listening on\" line, or no 200 from ReadyURL) within %v", ErrProtect, cfg.Ready)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = p.Stop(5 * time.Second)
	return nil, err
}

// pollReady GETs u every 20 ms until it answers 200, then sends a ready
// line; it gives up when ctx ends.
func pollReady(ctx context.Context, u string, ready chan<- string) {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				client.CloseIdleConnections()
				ready <- "listening on " + u
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *Protect) readStdout(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "listening on ") {
			select {
			case ready <- line:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

func (p *Protect) readStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, raceMarker) {
			p.races.Add(1)
		}
		p.mu.Lock()
		if len(p.tail) == 40 {
			p.tail = p.tail[1:]
		}
		p.tail = append(p.tail, line)
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// Races is the number of "WARNING: DATA RACE" reports the child printed
// so far (always 0 for a binary built without -race).
func (p *Protect) Races() int64 { return p.races.Load() }

// Tail returns the last lines the child wrote to stderr.
func (p *Protect) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// PeakRSS returns the child's peak resident set size (VmHWM of
// /proc/PID/status) in bytes; it fails where /proc does not exist.
func (p *Protect) PeakRSS() (uint64, error) {
	return procStatusBytes(strconv.Itoa(p.cmd.Process.Pid), "VmHWM")
}

// Stop sends SIGTERM, waits up to grace for the child to exit, then kills
// it. It returns the child's exit error (nil for a clean exit; a SIGKILL
// after grace is an error). Calls after the first return the same result.
func (p *Protect) Stop(grace time.Duration) error {
	p.stopped.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			<-p.done
			p.waitErr = fmt.Errorf("%w: killed after not exiting within %v of SIGTERM (%v)", ErrProtect, grace, p.waitErr)
		}
	})
	<-p.done
	return p.waitErr
}

// CPUTime returns the processor time (user and system) the child used so
// far ([ProcessCPUTime]).
func (p *Protect) CPUTime() (time.Duration, error) {
	return ProcessCPUTime(p.cmd.Process.Pid)
}

// Syscalls returns the read and write system calls the child made so far
// ([ProcessSyscalls]).
func (p *Protect) Syscalls() (reads, writes uint64, err error) {
	return ProcessSyscalls(p.cmd.Process.Pid)
}
