package main

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// jsonrpcLines passes the bridge's stdout on and fails the test at any
// line that is not one JSON-RPC 2.0 message.
type jsonrpcLines struct {
	t       *testing.T
	w       io.Writer
	mu      sync.Mutex
	partial []byte
	lines   []map[string]any
}

func (j *jsonrpcLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	j.partial = append(j.partial, p...)
	for {
		i := bytes.IndexByte(j.partial, '\n')
		if i < 0 {
			break
		}
		var m map[string]any
		if err := json.Unmarshal(j.partial[:i], &m); err != nil || m["jsonrpc"] != "2.0" {
			j.t.Errorf("stdout carried a line that is not JSON-RPC: %.200q", j.partial[:i])
		}
		j.lines = append(j.lines, m)
		j.partial = j.partial[i+1:]
	}
	j.mu.Unlock()
	return j.w.Write(p)
}

// bridgeProc is `mcpauth bridge` run in-process with piped stdio.
type bridgeProc struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	stderr syncBuffer
	done   chan error
}

func startBridgeCmd(t *testing.T, args ...string) *bridgeProc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &bridgeProc{in: inW, out: outR, done: make(chan error, 1)}
	lines := &jsonrpcLines{t: t, w: outW}
	go func() {
		err := runBridge(context.Background(), args, inR, lines, &p.stderr)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		inR.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(30 * time.Second):
			t.Error("the bridge did not exit")
		}
		if jwtPattern.MatchString(p.stderr.String()) {
			t.Error("a token on stderr")
		}
	})
	return p
}

// request writes one line and reads the next line of stdout.
func (p *bridgeProc) request(t *testing.T, line string) map[string]any {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
	return p.read(t)
}

// read reads the next line of stdout.
func (p *bridgeProc) read(t *testing.T) map[string]any {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		var buf []byte
		one := make([]byte, 1)
		for {
			if _, err := p.out.Read(one); err != nil || one[0] == '\n' {
				got <- buf
				return
			}
			buf = append(buf, one[0])
		}
	}()
	select {
	case b := <-got:
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer; stderr: %s", p.stderr.String())
	}
	return nil
}

// TestBridgeHeaderFlag: --header takes 'Name: value', expands ${VAR}
// from the environment and refuses credentials, hop-by-hop and transport
// headers.
func TestBridgeHeaderFlag(t *testing.T) {
	env := map[string]string{"TENANT": "acme", "EMPTY": ""}
	cases := []struct {
		in, name, value, err string
	}{
		{in: "X-Tenant: acme", name: "X-Tenant", value: "acme"},
		{in: "x-api-key:${TENANT}-key", name: "X-Api-Key", value: "acme-key"},
		{in: "Authorization: Bearer abc", err: "Authorization is refused"},
		{in: "authorization:Bearer abc", err: "refused"},
		{in: "Proxy-Authorization: Basic x", err: "refused"},
		{in: "Cookie: session=1", err: "refused"},
		{in: "DPoP: eyJ", err: "refused"},
		{in: "Transfer-Encoding: chunked", err: "refused"},
		{in: "Host: evil.example", err: "refused"},
		{in: "Mcp-Session-Id: s", err: "refused"},
		{in: "Mcp-Param-Region: eu", err: "refused"},
		{in: "no colon", err: "not 'Name: value'"},
		{in: "Bad Name: x", err: "not 'Name: value'"},
		{in: "X-A: ${EMPTY}", err: "not set"},
		{in: "X-A: ${1X}", err: "not a variable name"},
		{in: "X-A: ${OPEN", err: "unterminated"},
		{in: "X-A: a\rb", err: "control character"},
	}
	for _, c := range cases {
		h := headerFlag{h: http.Header{}, getenv: func(k string) string { return env[k] }}
		err := h.Set(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || h.h.Get(c.name) != c.value):
			t.Errorf("%q: %v %v", c.in, err, h.h)
		}
	}
	if code, _, errOut := runCmd(t, "bridge", "--header", "Authorization: Bearer x", "https://mcp.example.com/mcp"); code != 2 ||
		!strings.Contains(errOut, "OAuth") {
		t.Errorf("bridge --header Authorization: exit %d %s", code, errOut)
	}
}

// TestBridgeLoginCommandLine: the hint names the flags that pick the token
// and never the secret.
func TestBridgeLoginCommandLine(t *testing.T) {
	f := &clientFlags{store: "/tmp/my tokens.json", clientID: "abc", clientSecret: "s3cret", scopes: "a b", insecureHTTP: true}
	got := loginCommandLine(f, "http://127.0.0.1:1/mcp")
	want := `mcpauth login --store '/tmp/my tokens.json' --client-id abc --scopes 'a b' --client-secret … --insecure-http http://127.0.0.1:1/mcp`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestBridgeMaliciousMetadata: an authorization server whose
// authorization_endpoint is file:, javascript:, data:, malformed or carries shell
// metacharacters gets nothing executed: the system opener (a fake
// xdg-open on PATH that records its arguments) is not started for the
// first two and gets the URL as one argument for the third, no shell
// interprets it, and the host gets a JSON-RPC error each time.
func TestBridgeMaliciousMetadata(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fake opener stands in for xdg-open")
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "opener.log")
	canary := filepath.Join(dir, "canary")
	opener := "#!/bin/sh\nprintf 'argc=%s\\n' \"$#\" >> " + record + "\nfor a in \"$@\"; do printf 'arg=%s\\n' \"$a\" >> " + record + "; done\n"
	if err := os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(opener), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	as, srv := oauthtest.NewCombined(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{})

	shell := "BASE/authorize?x=$(touch${IFS}" + canary + ")&y=;touch${IFS}" + canary + ";&z=|sh"
	cases := []struct {
		name, endpoint string
		opened         bool
	}{
		{"file", "file:///etc/passwd", false},
		{"javascript", "javascript:alert(document.cookie)//", false},
		{"data", "data:text/html,<script>alert(1)</script>", false},
		{"https without a host", "https:/authorize", false},
		{"shell metacharacters", shell, true},
	}
	for _, c := range cases {
		as.Update(func(o *oauthtest.ASOptions) {
			o.AuthorizationEndpoint = strings.ReplaceAll(c.endpoint, "BASE", srv.URL)
		})
		_ = os.Remove(record)
		p := startBridgeCmd(t, "--insecure-http", "--browser", "system", "--store", filepath.Join(t.TempDir(), "t.json"),
			"--auth-timeout", "2s", srv.URL+"/mcp")
		m := p.request(t, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)
		e, _ := m["error"].(map[string]any)
		if m["id"] != 7.0 || e == nil || e["code"] != float64(bridge.CodeAuthorization) || !strings.Contains(e["message"].(string), "mcpauth login") {
			t.Errorf("%s: host got %v", c.name, m)
		}
		log, _ := os.ReadFile(record)
		switch {
		case !c.opened && len(log) > 0:
			t.Errorf("%s: the opener ran: %s", c.name, log)
		case c.opened:
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			if len(lines) != 2 || lines[0] != "argc=1" || !strings.HasPrefix(lines[1], "arg="+srv.URL+"/authorize?") {
				t.Errorf("%s: the opener got %q, want the URL as one argument", c.name, log)
			}
		}
		if _, err := os.Stat(canary); err == nil {
			t.Fatalf("%s: a shell ran the URL", c.name)
		}
	}
}

// TestBridgeLoginTimeout: two messages arrive, the login they need is
// never approved: one authorization URL is printed, not two, both messages
// get an error after --auth-timeout saying what to do, and the next
// message starts a new login.
func TestBridgeLoginTimeout(t *testing.T) {
	t.Parallel()
	_, srv := oauthtest.NewCombined(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{})
	p := startBridgeCmd(t, "--insecure-http", "--browser", "print", "--store", filepath.Join(t.TempDir(), "t.json"),
		"--auth-timeout", "1s", srv.URL+"/mcp")
	if _, err := io.WriteString(p.in, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	ids := map[float64]bool{}
	for range 2 {
		m := p.read(t)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if e["code"] != float64(bridge.CodeAuthorization) || !strings.Contains(msg, "timed out") || !strings.Contains(msg, "mcpauth login") {
			t.Errorf("waiting message: %v", m)
		}
		id, _ := m["id"].(float64)
		ids[id] = true
	}
	if !ids[1] || !ids[2] {
		t.Errorf("answered ids %v", ids)
	}
	if n := strings.Count(p.stderr.String(), "Open this URL"); n != 1 {
		t.Errorf("%d authorization prompts for two waiting messages, want 1:\n%s", n, p.stderr.String())
	}
	if m := p.request(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`); m["error"] == nil {
		t.Errorf("third message: %v", m)
	}
	if n := strings.Count(p.stderr.String(), "Open this URL"); n != 2 {
		t.Errorf("the next message did not start a new login (%d prompts)", n)
	}
}

// TestBridgeStatefulSession: a 2025-11-25 stateful go-sdk server behind
// resource/: the Go SDK client (over the bridge's stdio) logs in through
// the bridge, gets progress notifications in order, answers an elicitation
// the tool makes mid-call (a server request relayed to the host and the
// host's answer POSTed back in the same session), and on close the bridge
// deletes the session.
func TestBridgeStatefulSession(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "stateful", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= 5; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 5})
		}
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return textResult(fmt.Sprintf("%s:%v", res.Action, res.Content["answer"])), nil, nil
	})
	var mu sync.Mutex
	sessions := map[string]bool{}
	var deleted []string
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	mcpURL := protectedServer(t, resource.DPoPDisabled, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			sessions[id] = true
			if r.Method == http.MethodDelete {
				deleted = append(deleted, id)
			}
		}
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))

	p := startBridgeCmd(t, "--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "t.json"), mcpURL)
	var progress []float64
	var pmu sync.Mutex
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != "Proceed?" {
				return nil, fmt.Errorf("elicitation %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			pmu.Lock()
			progress = append(progress, req.Params.Progress)
			pmu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: p.out, Writer: p.in}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, p.stderr.String())
	}
	params := &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("confirm: %v; stderr: %s", err, p.stderr.String())
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "accept:yes" {
		t.Errorf("elicitation round trip: %q", got)
	}
	pmu.Lock()
	if !slices.Equal(progress, []float64{1, 2, 3, 4, 5}) {
		t.Errorf("progress %v, want 1..5 in order", progress)
	}
	pmu.Unlock()
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if err := <-p.done; err != nil {
		t.Fatalf("bridge: %v", err)
	}
	p.done <- nil
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) != 1 || len(deleted) != 1 || !sessions[deleted[0]] {
		t.Errorf("sessions %v, deleted %v: want one session, deleted on exit", sessions, deleted)
	}
}

func firstURLIn(t *testing.T, line string) string {
	t.Helper()
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("no URL in %q", line)
	}
	return strings.Fields(line[i:])[0]
}

// protectedServer serves h behind resource/ (with the DPoP mode given) on
// 127.0.0.1, with `mcpauth authserver` (consent auto) as its authorization
// server, and returns the MCP URL.
func protectedServer(t *testing.T, dpop resource.DPoPMode, h http.Handler) string {
	t.Helper()
	asLine, stopAS := startCommand(t, "authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "auto", "--scopes", "mcp:tools")
	t.Cleanup(func() { stopAS() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpURL := "http://" + ln.Addr().String() + "/mcp"
	v, err := resource.New(resource.Config{Resource: mcpURL, Issuers: []resource.Issuer{{Issuer: firstURLIn(t, asLine)}},
		ScopesSupported: []string{"mcp:tools"}, InsecureAllowHTTPLoopback: true, DPoP: resource.DPoPConfig{Mode: dpop}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	v.Mount(mux, h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close(); v.Close() })
	return mcpURL
}

// TestBridgeDPoP: with --dpop-key the bridge obtains a DPoP-bound token
// and presents it with a proof to a resource that requires DPoP; a second
// run with the same key and store uses the stored token without a new
// authorization.
func TestBridgeDPoP(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "dpop", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "scheme"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return textResult("ok"), nil, nil
	})
	// DPoPRequired: only a DPoP-bound token with a valid proof gets through.
	mcpURL := protectedServer(t, resource.DPoPRequired,
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	dir := t.TempDir()
	keyFile := writeECKey(t, dir, elliptic.P256())
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"scheme","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	for run := range 2 {
		p := startBridgeCmd(t, "--insecure-http", "--browser", "http", "--store", filepath.Join(dir, "t.json"),
			"--dpop-key", keyFile, "--log-level", "info", mcpURL)
		m := p.request(t, call)
		if r, _ := m["result"].(map[string]any); r == nil || r["isError"] == true {
			t.Fatalf("run %d: %v; stderr: %s", run, m, p.stderr.String())
		}
		p.in.Close()
		<-p.done
		p.done <- nil
		if authorized := strings.Contains(p.stderr.String(), "msg=authorized"); authorized != (run == 0) {
			t.Errorf("run %d: authorized=%v:\n%s", run, authorized, p.stderr.String())
		}
	}
}

// The bridge tells the user what to do for each class of the client's
// errors, with its own message for a login nobody approved in time.
func TestAuthErrorMessage(t *testing.T) {
	msg := authErrorMessage("mcpauth login URL", time.Minute)
	tests := []struct {
		name    string
		err     error
		ok      bool
		timeout bool
	}{
		{"bridge timeout", errAuthTimeout, true, true},
		{"loopback timeout", fmt.Errorf("%w: %w", client.ErrAuthorization, context.DeadlineExceeded), true, true},
		{"refused authorization", fmt.Errorf("%w: access_denied", client.ErrAuthorization), true, false},
		{"discovery", &url.Error{Op: "Post", URL: "https://mcp.example.com", Err: fmt.Errorf("%w: x", client.ErrDiscovery)}, true, false},
		{"token", client.ErrTokenRequest, true, false},
		{"forbidden", client.ErrForbidden, true, false},
		{"config", client.ErrConfig, true, false},
		{"discovery fetch deadline is no login timeout", fmt.Errorf("%w: %w", client.ErrDiscovery, context.DeadlineExceeded), true, false},
		{"not the client's", errors.New("connection refused"), false, false},
		{"revocation is not an authorization failure", client.ErrRevocation, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := msg(tt.err)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%q)", ok, tt.ok, got)
			}
			if ok && strings.HasPrefix(got, "authorization timed out") != tt.timeout {
				t.Errorf("message %q; timeout %v", got, tt.timeout)
			}
		})
	}
}
