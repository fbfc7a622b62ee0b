//go:build e2e

// End-to-end tests of the mcpauth binary: built once, run as separate
// processes on 127.0.0.1 with random ports, every process stopped by the
// test that started it. Run them with `make e2e` (go test -tags e2e).

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binary is the mcpauth executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpauth-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "mcpauth")
	args := []string{"build", "-o", binary}
	if os.Getenv("E2E_RACE") != "" {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcpauth:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running mcpauth process.
type proc struct {
	cmd    *exec.Cmd
	ready  string
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// startProc starts `mcpauth args...`, waits for its `listening on` line and
// makes sure it is gone when the test ends.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, nil, args...)
}

// startProcEnv is startProc with env added to the test's environment.
func startProcEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		lines <- line
		_, _ = io.Copy(&p.stdout, br)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	select {
	case p.ready = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpauth %s: no ready line; stderr: %s", args[0], p.stderr.String())
	}
	if !strings.HasPrefix(p.ready, "listening on ") {
		<-p.done
		t.Fatalf("mcpauth %s: ready line %q; stderr: %s", args[0], p.ready, p.stderr.String())
	}
	return p
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// signal sends sig and waits for the exit, returning the exit code.
func (p *proc) signal(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit after %v; stderr: %s", sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// waitFor polls cond (bounded) for events that have no other signal.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// runBin runs `mcpauth args...` to completion.
func runBin(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("mcpauth %s: %v", args[0], err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

var firstURL = regexp.MustCompile(`listening on (http://[^\s)]+)`)

// mcpUpstream is a go-sdk MCP server without any auth, the server `protect`
// fronts. slow reports progress and waits for release (or its context).
type mcpUpstream struct {
	srv      *httptest.Server
	started  chan struct{}
	release  chan struct{}
	canceled chan struct{}
	once     sync.Once
}

func newUpstream(t *testing.T) *mcpUpstream {
	u := &mcpUpstream{started: make(chan struct{}, 4), release: make(chan struct{}), canceled: make(chan struct{}, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		return textResult(in.Message), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "headers"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		h := req.Extra.Header
		return textResult(fmt.Sprintf("user=%s scopes=%s authorization=%q", h.Get(headerUser), h.Get(headerScopes), h.Get("Authorization"))), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "working"})
		}
		u.started <- struct{}{}
		select {
		case <-u.release:
			return textResult("slow done"), nil, nil
		case <-ctx.Done():
			u.canceled <- struct{}{}
			return nil, nil, ctx.Err()
		}
	})
	u.srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(func() { u.once.Do(func() { close(u.release) }); u.srv.Close() })
	return u
}

// stack is `authserver` + `protect` in front of an upstream.
type e2eStack struct {
	as, protect *proc
	up          *mcpUpstream
	url         string
	client      []string // flags shared by the client commands
}

func startStack(t *testing.T) *e2eStack {
	t.Helper()
	s := &e2eStack{up: newUpstream(t)}
	s.as = startProc(t, "authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "auto", "--scopes", "mcp:tools mcp:admin")
	issuer := firstURL.FindStringSubmatch(s.as.ready)[1]
	s.protect = startProc(t, "protect", "--addr", "127.0.0.1:0", "--upstream", s.up.srv.URL+"/mcp", "--issuer", issuer,
		"--insecure-http", "--scopes", "mcp:tools mcp:admin", "--require", "mcp:tools", "--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	s.url = firstURL.FindStringSubmatch(s.protect.ready)[1] + "/mcp"
	s.client = []string{"--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json")}
	return s
}

func (s *e2eStack) cmd(name string, rest ...string) []string {
	return append(append([]string{name}, s.client...), rest...)
}

// TestE2EDemo: `mcpauth demo` runs to completion with its narration.
func TestE2EDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := runBin(t, "", "demo", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	checkDemoNarration(t, out)
	if jwtPattern.MatchString(errOut) {
		t.Error("a token in the logs")
	}
}

// TestE2EProtectLoginCall: authserver + protect + login --browser http +
// call; the token from `token` as a bearer token; identity headers and no
// Authorization upstream (RS-19); the AS killed mid-session does not break
// calls with a still-valid token; metrics counted.
func TestE2EProtectLoginCall(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	if code, out, errOut := runBin(t, "", s.cmd("login", s.url)...); code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("login: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runBin(t, "", s.cmd("call", s.url, "echo", "--args", `{"message":"through the proxy"}`)...)
	if code != 0 || !strings.Contains(out, `"text": "through the proxy"`) {
		t.Fatalf("call: %d %s %s", code, out, errOut)
	}
	code, out, _ = runBin(t, "", s.cmd("call", s.url, "headers")...)
	if code != 0 || !strings.Contains(out, `user=demo-user scopes=mcp:tools mcp:admin authorization=\"\"`) {
		t.Fatalf("RS-19 / identity headers: %d %s", code, out)
	}
	code, tok, errOut := runBin(t, "", s.cmd("token", s.url)...)
	if code != 0 {
		t.Fatalf("token: %d %s", code, errOut)
	}
	if status := rawToolsList(t, s.url, strings.TrimSpace(tok)); status != http.StatusOK {
		t.Fatalf("token as bearer: %d", status)
	}

	if code := s.as.signal(t, syscall.SIGKILL); code == 0 {
		t.Log("authorization server killed")
	}
	code, out, errOut = runBin(t, "", s.cmd("call", s.url, "echo", "--args", `{"message":"AS is gone"}`)...)
	if code != 0 || !strings.Contains(out, "AS is gone") {
		t.Fatalf("call after the AS died: %d %s %s", code, out, errOut)
	}

	if status := rawToolsList(t, s.url, ""); status != http.StatusUnauthorized {
		t.Fatalf("no token through the proxy: %d", status)
	}
	metricsURL := regexp.MustCompile(`metrics (http://\S+/metrics)`).FindStringSubmatch(s.protect.ready)[1]
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`mcpauth_protect_decisions_total\{decision="allow",reason="ok"\} [1-9]`).Match(body) ||
		!strings.Contains(string(body), `decision="deny",reason="resource: no access token"`) {
		t.Errorf("metrics:\n%s", body)
	}
	for _, o := range []string{s.protect.stderr.String(), s.protect.stdout.String()} {
		if strings.Contains(o, strings.TrimSpace(tok)) {
			t.Error("RS-24: protect logged the token")
		}
	}
	if code := s.protect.signal(t, syscall.SIGTERM); code != 0 {
		t.Errorf("protect exit %d: %s", code, s.protect.stderr.String())
	}
}

// TestE2ESIGTERMDuringStream: SIGTERM to `protect` while a tool call
// streams lets the call finish and then exits 0; SIGTERM to `call` ends it
// at once and cancels the tool upstream (TR-10).
func TestE2ESIGTERMDuringStream(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	if code, _, errOut := runBin(t, "", s.cmd("login", s.url)...); code != 0 {
		t.Fatalf("login: %s", errOut)
	}

	// SIGTERM to the caller: it stops, and the upstream handler is cancelled.
	caller := exec.Command(binary, s.cmd("call", s.url, "slow")...)
	var callerErr syncBuffer
	caller.Stderr = &callerErr
	if err := caller.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = caller.Process.Kill(); _ = caller.Wait() })
	<-s.up.started
	waitFor(t, "the progress notification", func() bool { return strings.Contains(callerErr.String(), "progress 1/2 working") })
	_ = caller.Process.Signal(syscall.SIGTERM)
	_ = caller.Wait()
	if caller.ProcessState.ExitCode() == 0 {
		t.Error("call reported success after SIGTERM")
	}
	select {
	case <-s.up.canceled:
	case <-time.After(30 * time.Second):
		t.Error("TR-10: the upstream tool was not cancelled when the caller went away")
	}

	// SIGTERM to the proxy: the stream in flight completes, then it exits.
	type result struct {
		code     int
		out, err string
	}
	res := make(chan result, 1)
	go func() {
		code, out, errOut := runBin(t, "", s.cmd("call", s.url, "slow")...)
		res <- result{code, out, errOut}
	}()
	<-s.up.started
	_ = s.protect.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "protect to begin shutting down", func() bool { return strings.Contains(s.protect.stderr.String(), "shutting down") })
	s.up.once.Do(func() { close(s.up.release) })
	r := <-res
	if r.code != 0 || !strings.Contains(r.out, "slow done") {
		t.Fatalf("the streaming call did not finish cleanly: %d %s %s\nprotect's log:\n%s", r.code, r.out, r.err, s.protect.stderr.String())
	}
	<-s.protect.done
	if code := s.protect.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("protect exit %d: %s", code, s.protect.stderr.String())
	}
}

// TestE2ECheck: `check` passes against `demo --no-client` (with a token
// and the step-up tool too) and finds failures in a broken server.
func TestE2ECheck(t *testing.T) {
	t.Parallel()
	demo := startProc(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	u := demoReady.FindStringSubmatch(demo.ready)[2]
	code, out, errOut := runBin(t, "", "check", "--insecure-http", u)
	if code != 0 || strings.Contains(out, "FAIL") || !strings.Contains(out, "0 fail") {
		t.Fatalf("check without token: %d\n%s\n%s", code, out, errOut)
	}
	store := []string{"--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json")}
	code, tok, errOut := runBin(t, "", append(append([]string{"token"}, store...), "--scopes", "mcp:tools", u)...)
	if code != 0 {
		t.Fatalf("token: %s", errOut)
	}
	code, out, errOut = runBin(t, tok, "check", "--insecure-http", "--token", "-", "--step-up-tool", "admin_echo", u)
	if code != 0 || !strings.Contains(out, "0 fail") || !strings.Contains(out, "PASS    RS-12") {
		t.Fatalf("check with token: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, strings.TrimSpace(tok)) {
		t.Error("check printed the token")
	}

	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer broken.Close()
	code, out, _ = runBin(t, "", "check", "--insecure-http", broken.URL+"/mcp")
	if code != 1 || !strings.Contains(out, "FAIL") {
		t.Fatalf("check against a broken server: %d\n%s", code, out)
	}
	if code := demo.signal(t, syscall.SIGINT); code != 0 {
		t.Errorf("demo exit %d after SIGINT: %s", code, demo.stderr.String())
	}
}
