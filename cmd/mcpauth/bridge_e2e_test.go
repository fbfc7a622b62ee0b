//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
)

// bridgeTee runs `mcpauth bridge args...` through bash so that a copy of
// its stdout lands in a file and its exit status in another; the SDKs
// under test start it as their stdio server. checkTee then checks every
// line.
func bridgeTee(t *testing.T, args ...string) (name string, argv []string, tee string) {
	t.Helper()
	tee = filepath.Join(t.TempDir(), "stdout")
	script := `"$0" "$@" | tee "` + tee + `"; echo "${PIPESTATUS[0]}" > "` + tee + `.exit"`
	return "bash", append([]string{"-c", script, binary, "bridge"}, args...), tee
}

// checkTee fails the test at any stdout line that is not one JSON-RPC 2.0
// message and returns the bridge's exit status.
func checkTee(t *testing.T, tee string) (lines int, exit string) {
	t.Helper()
	data, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		checkJSONRPC(t, line)
		lines++
	}
	code, _ := os.ReadFile(tee + ".exit")
	return lines, strings.TrimSpace(string(code))
}

func checkJSONRPC(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m["jsonrpc"] != "2.0" {
		t.Errorf("stdout carried a line that is not a JSON-RPC message: %.200q", line)
	}
	return m
}

// fakeOpener puts an xdg-open on PATH that records each run.
func fakeOpener(t *testing.T) (env []string, record string) {
	dir := t.TempDir()
	record = filepath.Join(dir, "opened")
	script := "#!/bin/sh\necho \"$@\" >> " + record + "\n"
	if err := os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH")), record
}

// TestE2EBridgeGoSDK: the official Go SDK client, over mcp.CommandTransport
// running `mcpauth bridge`, against `mcpauth demo --no-client`: list tools,
// echo, admin_echo through a step-up; the bridge exits 0 when the client
// closes stdin. A second run with --browser system reuses the stored
// token, and so does a run after `mcpauth login`: no browser is started.
func TestE2EBridgeGoSDK(t *testing.T) {
	t.Parallel()
	demo := startProc(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	u := demoReady.FindStringSubmatch(demo.ready)[2]
	store := filepath.Join(t.TempDir(), "tokens.json")
	env, opened := fakeOpener(t)

	session := func(browser, store string) (string, string) {
		name, argv, tee := bridgeTee(t, "--insecure-http", "--browser", browser, "--store", store, "--log-level", "debug", u)
		cmd := exec.Command(name, argv...)
		cmd.Env = env
		var stderr syncBuffer
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil).Connect(ctx,
			&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v; stderr: %s", err, stderr.String())
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"admin_echo", "echo", "whoami"}) {
			t.Errorf("tools %v", names)
		}
		call := func(tool, msg string) string {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": msg}})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v; stderr: %s", tool, err, res, stderr.String())
			}
			return res.Content[0].(*mcp.TextContent).Text
		}
		if got := call("echo", "hello"); got != "hello" {
			t.Errorf("echo: %q", got)
		}
		if got := call("admin_echo", "step up"); got != "STEP UP" {
			t.Errorf("admin_echo: %q", got)
		}
		if err := cs.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		n, exit := checkTee(t, tee)
		if exit != "0" || n < 3 {
			t.Errorf("bridge exit %q after %d lines; stderr: %s", exit, n, stderr.String())
		}
		if out, _ := os.ReadFile(tee); jwtPattern.MatchString(stderr.String()) || jwtPattern.Match(out) {
			t.Error("a token on the bridge's stderr (at --log-level debug) or stdout")
		}
		return stderr.String(), tee
	}
	session("http", store)
	errOut, _ := session("system", store)
	if _, err := os.Stat(opened); err == nil || strings.Contains(errOut, "Opening your browser") {
		t.Errorf("the second run started a browser: %s", errOut)
	}
	// `mcpauth login` beforehand: the bridge uses its token.
	loggedIn := filepath.Join(t.TempDir(), "tokens.json")
	if code, _, errOut := runBin(t, "", "login", "--insecure-http", "--browser", "http", "--store", loggedIn,
		"--scopes", "mcp:tools mcp:admin", u); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	errOut, _ = session("system", loggedIn)
	if _, err := os.Stat(opened); err == nil || strings.Contains(errOut, "Opening your browser") {
		t.Errorf("the bridge after `mcpauth login` started a browser: %s", errOut)
	}
}

// TestE2EBridgeTypeScriptSDK: the official TypeScript SDK v2 client
// (StdioClientTransport) against the bridge in front of `mcpauth demo
// --no-client`.
func TestE2EBridgeTypeScriptSDK(t *testing.T) {
	t.Parallel()
	needInteropTools(t, "@modelcontextprotocol/client")
	demo := startProc(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	u := demoReady.FindStringSubmatch(demo.ready)[2]
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	name, argv, tee := bridgeTee(t, "--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "t.json"), u)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"bridge.mjs", name}, argv...)...)
	cmd.Dir = interopDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bridge.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var r struct {
		Tools        []string `json:"tools"`
		Echo, Admin  string
		AdminIsError bool `json:"adminIsError"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("report: %v: %s", err, stdout.String())
	}
	t.Logf("report: %s", bytes.TrimSpace(stdout.Bytes()))
	if !slices.Equal(r.Tools, []string{"admin_echo", "echo", "whoami"}) || r.Echo != "over stdio" || r.Admin != "THROUGH THE BRIDGE" || r.AdminIsError {
		t.Errorf("report %+v", r)
	}
	if _, exit := checkTee(t, tee); exit != "0" {
		t.Errorf("bridge exit %q; stderr: %s", exit, stderr.String())
	}
	if jwtPattern.MatchString(stderr.String()) {
		t.Error("a token on stderr")
	}
}

// bridgeCmd is a `mcpauth bridge` process driven line by line.
type bridgeCmd struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	stderr syncBuffer
}

func startBridgeProc(t *testing.T, args ...string) *bridgeCmd {
	t.Helper()
	return startBridgeBin(t, binary, args...)
}

// startBridgeBin is startBridgeProc with the executable bin.
func startBridgeBin(t *testing.T, bin string, args ...string) *bridgeCmd {
	t.Helper()
	b := &bridgeCmd{cmd: exec.Command(bin, append([]string{"bridge"}, args...)...), lines: make(chan map[string]any, 64)}
	b.cmd.Stderr = &b.stderr
	var err error
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(b.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			b.lines <- checkJSONRPC(t, sc.Bytes())
		}
	}()
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); _ = b.cmd.Wait() })
	return b
}

func (b *bridgeCmd) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(b.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (b *bridgeCmd) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-b.lines:
		if !ok {
			t.Fatalf("stdout closed; stderr: %s", b.stderr.String())
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatalf("no message; stderr: %s", b.stderr.String())
	}
	return nil
}

// peakRSS returns the running bridge's peak RSS in KiB (0 where it is not
// measured).
func (b *bridgeCmd) peakRSS(t *testing.T) int64 {
	t.Helper()
	rss, ok := peakRSSKiB(b.cmd.Process.Pid)
	if !ok && runtime.GOOS == "linux" {
		t.Fatal("could not read the bridge's peak RSS")
	}
	return rss
}

// wait waits for the exit and returns the status.
func (b *bridgeCmd) wait(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the bridge did not exit; stderr: %s", b.stderr.String())
	}
	return b.cmd.ProcessState.ExitCode()
}

func rpcError(m map[string]any) (int, string) {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	s, _ := e["message"].(string)
	return int(c), s
}

// largeAnswer and largeMaxMessage are the answers of the "large answers in
// a row" test and the bridge's --max-message-size there.
const (
	largeAnswer     = 20 << 20
	largeMaxMessage = 24 << 20
)

// bridgeRSSBoundKiB is the peak RSS README states for a bridge relaying
// messages of at most max bytes one after another: 3 × max + 32 MiB.
func bridgeRSSBoundKiB(max int) int64 { return (3*int64(max) + 32<<20) >> 10 }

// rssBinary is an mcpauth executable whose memory is the program's own:
// the one TestMain built, or, when that one has the race detector (whose
// shadow memory would dwarf the bridge's), one built without it, once.
func rssBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("E2E_RACE") == "" {
		return binary
	}
	plainOnce.Do(func() {
		out := filepath.Join(filepath.Dir(binary), "mcpauth-norace")
		build := exec.Command("go", "build", "-o", out, ".")
		if msg, err := build.CombinedOutput(); err != nil {
			plainErr = fmt.Errorf("building mcpauth without -race: %v\n%s", err, msg)
			return
		}
		plainBinary = out
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBinary
}

var (
	plainOnce   sync.Once
	plainBinary string
	plainErr    error
)

// TestE2EBridgeLifecycle, process level: a server killed mid-stream gives
// the host an error and the bridge goes on; a 50 MB answer is an error
// within bounded memory; large answers and requests one after another stay
// within README's bound; stdin closed with requests in flight lets the
// fast one finish, cancels the other after --grace, and exits 0; SIGTERM
// does the same.
func TestE2EBridgeLifecycle(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	if code, _, errOut := runBin(t, "", s.cmd("login", s.url)...); code != 0 {
		t.Fatalf("login: %s", errOut)
	}
	const metaFields = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
	const meta = `"_meta":{` + metaFields + `}`

	t.Run("server killed mid-stream", func(t *testing.T) {
		b := startBridgeProc(t, append(s.client, s.url)...)
		b.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p",`+metaFields+`}}}`)
		if m := b.recv(t); m["method"] != "notifications/progress" {
			t.Fatalf("progress: %v", m)
		}
		<-s.up.started
		s.protect.signal(t, syscall.SIGKILL)
		if code, msg := rpcError(b.recv(t)); code != bridge.CodeUnreachable {
			t.Fatalf("after the kill: %d %s", code, msg)
		}
		b.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`)
		if code, msg := rpcError(b.recv(t)); code != bridge.CodeUnreachable || !strings.Contains(msg, "next message tries again") {
			t.Fatalf("server gone: %d %s", code, msg)
		}
		b.stdin.Close()
		if code := b.wait(t); code != 0 {
			t.Errorf("exit %d", code)
		}
	})

	release := make(chan struct{})
	started := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"huge"`)):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"pad":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range 50 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			fmt.Fprint(w, `"}}`)
		case bytes.Contains(body, []byte(`"large"`)):
			// An answer of largeAnswer bytes as JSON (with its length)
			// or as one event of an event stream, or a small one.
			var req struct {
				ID     json.RawMessage `json:"id"`
				Params struct {
					Arguments struct {
						As string `json:"as"`
					} `json:"arguments"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &req)
			head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`
			const tail = `"}]}}`
			n := largeAnswer - len(head) - len(tail)
			switch req.Params.Arguments.As {
			case "sse":
				w.Header().Set("Content-Type", "text/event-stream")
				head = "data: " + head
			case "json":
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(largeAnswer))
			default:
				w.Header().Set("Content-Type", "application/json")
				n = 0
			}
			fmt.Fprint(w, head)
			pad := strings.Repeat("x", 1<<20)
			for ; n > 0; n -= len(pad) {
				if _, err := io.WriteString(w, pad[:min(n, len(pad))]); err != nil {
					return
				}
			}
			fmt.Fprint(w, tail)
			if req.Params.Arguments.As == "sse" {
				fmt.Fprint(w, "\n\n")
			}
		case bytes.Contains(body, []byte(`"quick"`)):
			started <- "quick"
			<-release
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":2,"result":{}}`)
		case bytes.Contains(body, []byte(`"stuck"`)):
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			started <- "stuck"
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	defer close(release)

	t.Run("50 MB answer", func(t *testing.T) {
		b := startBridgeBin(t, rssBinary(t), "--insecure-http", "--max-message-size", "1048576", "--store", filepath.Join(t.TempDir(), "t.json"), srv.URL+"/mcp")
		b.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"huge",`+meta+`}}`)
		if code, msg := rpcError(b.recv(t)); code != bridge.CodeBadResponse || !strings.Contains(msg, "over the limit") {
			t.Fatalf("50 MB: %d %s", code, msg)
		}
		rss := b.peakRSS(t) // while it runs: see peakRSSKiB
		b.stdin.Close()
		code := b.wait(t)
		t.Logf("peak RSS %d KiB", rss)
		if code != 0 || rss > 48<<10 {
			t.Errorf("exit %d, peak RSS %d KiB (a 50 MB answer must not be held in memory)", code, rss)
		}
	})

	t.Run("large messages in a row", func(t *testing.T) {
		b := startBridgeBin(t, rssBinary(t), "--insecure-http", "--max-message-size", strconv.Itoa(largeMaxMessage),
			"--store", filepath.Join(t.TempDir(), "t.json"), srv.URL+"/mcp")
		// Three answers as events (read in pieces), three as JSON (of
		// declared length), then two requests of the same size (with
		// small answers).
		pad := strings.Repeat("y", largeAnswer-256)
		for i, kind := range []string{"sse", "sse", "sse", "json", "json", "json", "request", "request"} {
			args := fmt.Sprintf(`{"as":%q}`, kind)
			if kind == "request" {
				args = fmt.Sprintf(`{"as":"small","pad":%q}`, pad)
			}
			b.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"large","arguments":%s,%s}}`, i, args, meta))
			m := b.recv(t)
			r, _ := m["result"].(map[string]any)
			c, _ := r["content"].([]any)
			if m["id"] != float64(i) || len(c) != 1 {
				code, msg := rpcError(m)
				t.Fatalf("message %d (%s): %d %s", i, kind, code, msg)
			}
			text, _ := c[0].(map[string]any)["text"].(string)
			want := largeAnswer - len(`{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":""}]}}`)
			if kind == "request" {
				want = 0
			}
			if len(text) != want {
				t.Fatalf("message %d (%s): %d bytes of text, want %d", i, kind, len(text), want)
			}
		}
		rss := b.peakRSS(t)
		b.stdin.Close()
		code := b.wait(t)
		bound := bridgeRSSBoundKiB(largeMaxMessage)
		t.Logf("peak RSS %d KiB after eight messages of %d MiB (bound %d KiB)", rss, largeAnswer>>20, bound)
		if code != 0 || rss > bound {
			t.Errorf("exit %d, peak RSS %d KiB over the bound of %d KiB (README, \"bridge\")", code, rss, bound)
		}
	})

	for _, how := range []string{"stdin closed", "SIGTERM"} {
		t.Run(how+" with requests in flight", func(t *testing.T) {
			b := startBridgeProc(t, "--insecure-http", "--grace", "1s", "--store", filepath.Join(t.TempDir(), "t.json"), srv.URL+"/mcp")
			b.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick",`+meta+`}}`)
			b.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"stuck",`+meta+`}}`)
			<-started
			<-started
			if how == "SIGTERM" {
				_ = b.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				b.stdin.Close()
			}
			release <- struct{}{}
			got := map[float64]int{}
			for range 2 {
				m := b.recv(t)
				code, _ := rpcError(m)
				got[m["id"].(float64)] = code
			}
			if got[2] != 0 || got[3] != bridge.CodeShutdown {
				t.Errorf("answers %v: want 2 answered, 3 cancelled (%d)", got, bridge.CodeShutdown)
			}
			if code := b.wait(t); code != 0 {
				t.Errorf("exit %d; stderr: %s", code, b.stderr.String())
			}
		})
	}
}
