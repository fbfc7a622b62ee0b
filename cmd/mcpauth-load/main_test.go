package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/testdb"
)

// TestMain lets -compare re-execute the test binary as a peer proxy, the
// way it re-executes mcpauth-load.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == peerCommand {
		os.Exit(runPeer(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestRunShort(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"-c", "4", "-d", "300ms", "-pool", "8"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "wrongly allowed 0, wrongly refused 0") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestRunBadFlag(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"-nope"}, &out, &errOut); code != 2 {
		t.Errorf("exit %d", code)
	}
}

// TestRunProtectShort drives a freshly built `mcpauth protect` child for two
// seconds: nothing wrongly allowed or refused (RS-07 invalid tokens, RS-08
// foreign audience, RS-17 query token, RS-19 no credential forwarded
// upstream), the child within its memory bound and stopped cleanly by
// SIGTERM.
func TestRunProtectShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds ./cmd/mcpauth")
	}
	bin, err := loadgen.BuildMcpauth(context.Background(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-protect", bin, "-c", "4", "-d", "2s", "-pool", "8"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	for _, want := range []string{"wrongly allowed 0, wrongly refused 0", "data races 0", "leaked 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunCompareShort runs one short round of -compare: the bare, SDK and
// signature-only peers (this binary re-executed; the last refuses the
// probe tokens first) and a freshly built protect, with and
// without a policy and with --dpop required (DPoP-bound tokens, a fresh
// proof per request), each answering every request of both workloads as
// expected, and the summary printed.
func TestRunCompareShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds ./cmd/mcpauth")
	}
	bin, err := loadgen.BuildMcpauth(context.Background(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-compare", "-protect", bin, "-rounds", "1", "-round", "300ms", "-c", "2"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	for _, want := range []string{"round  1:", "repeated token: protect / bare", "fresh token: protect / sdk", "ES256 verification in the load process", "fresh token: protect CPU per request within budget", "targets:",
		"protect+policy / bare", "repeated token, DPoP: protect+dpop / protect", "fresh token, DPoP: protect+dpop / protect",
		"peak RSS", "process CPU time per request", "jose refuses: bad-signature 401, alg-none 401, unknown-kid 401",
		"fresh token: jose / sdk (the bound for any go-jose verifier)", "the check as the jose peer pays it"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunRefreshShort runs one short round of -refresh on memory and on
// three replicas sharing a throwaway PostgreSQL: no wrong answer, and the
// sizes of the PostgreSQL refresh statements are reported.
func TestRunRefreshShort(t *testing.T) {
	t.Parallel()
	dbURL := testdb.StartPostgres(t).NewDatabase(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"-refresh", "memory,postgres3", "-database-url", dbURL, "-rounds", "1", "-d", "300ms", "-c", "4"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	for _, want := range []string{"memory ", "postgres3 ", "postgres3  refresh statements: ", "statements of 1: ",
		"memory     cpu per grant: this process ", "postgres3  cpu per grant: this process ", ", database server ", "; WAL flushes: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestNewRefreshTargetFailure: a set-up whose storage cannot be opened
// fails with the error and releases what it had (the listener), without
// stopping a server that never started.
func TestNewRefreshTargetFailure(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1 of the loopback: the connection is refused.
	url := "postgres://postgres@127.0.0.1:1/load?sslmode=disable&connect_timeout=5"
	for _, mode := range []string{"postgres", "postgres3"} {
		tgt, err := newRefreshTarget(context.Background(), mode, url, "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=", t.TempDir())
		if err == nil || tgt != nil {
			t.Fatalf("%s: %v, %v", mode, tgt, err)
		}
	}
	if _, err := newRefreshTarget(context.Background(), "nope", "", "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "unknown set-up") {
		t.Fatalf("unknown set-up: %v", err)
	}
}
