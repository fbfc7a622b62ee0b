//go:build e2e

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browserRun is a client command run with --browser print whose printed
// authorization URL a test visits as a browser would.
type browserRun struct {
	cmd     *exec.Cmd
	authURL chan string
	stderr  syncBuffer
	stdout  syncBuffer
	done    chan struct{}
}

func startBrowserRun(t *testing.T, args ...string) *browserRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	r := &browserRun{cmd: exec.CommandContext(ctx, binary, args...), authURL: make(chan string, 1), done: make(chan struct{})}
	r.cmd.Stdout = &r.stdout
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		for sc.Scan() {
			line := sc.Text()
			r.stderr.Write([]byte(line + "\n"))
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "http"); ok && strings.Contains(line, "state=") {
				select {
				case r.authURL <- "http" + u:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pipe)
		_ = r.cmd.Wait()
	}()
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); <-r.done })
	return r
}

// wait returns the exit code.
func (r *browserRun) wait() int {
	<-r.done
	return r.cmd.ProcessState.ExitCode()
}

// TestE2ECallRedirectKeepsToken: an MCP server that answers tools/call
// with a 307 or 308 to the same host on another port gets the request
// followed without the access token; the other port never sees
// Authorization, DPoP or Cookie.
func TestE2ECallRedirectKeepsToken(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var mu sync.Mutex
		var seen []http.Header
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
			http.Error(w, "nothing here", http.StatusNotFound)
		}))
		defer other.Close()
		up := newUpstream(t)
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Mcp-Method") == "tools/call" {
				http.Redirect(w, r, other.URL+"/mcp", status)
				return
			}
			up.srv.Config.Handler.ServeHTTP(w, r)
		}))
		defer redirecting.Close()
		as := startProc(t, "authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "auto", "--scopes", "mcp:tools")
		issuer := firstURL.FindStringSubmatch(as.ready)[1]
		protect := startProc(t, "protect", "--addr", "127.0.0.1:0", "--upstream", redirecting.URL+"/mcp", "--issuer", issuer,
			"--insecure-http", "--scopes", "mcp:tools", "--require", "mcp:tools")
		u := firstURL.FindStringSubmatch(protect.ready)[1] + "/mcp"
		code, out, errOut := runBin(t, "", "call", "--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json"),
			u, "echo", "--args", `{"message":"x"}`)
		if code == 0 {
			t.Errorf("%d: call succeeded against a redirect to nowhere: %s", status, out)
		}
		mu.Lock()
		if len(seen) == 0 {
			t.Errorf("%d: the redirect was not followed: %s", status, errOut)
		}
		for _, h := range seen {
			for _, k := range []string{"Authorization", "Dpop", "Cookie"} {
				if v := h.Get(k); v != "" {
					t.Errorf("%d: the other port got %s: %.20s...", status, k, v)
				}
			}
		}
		mu.Unlock()
	}
}

// clientStack is `authserver` (automatic consent, extra flags) + `protect`
// in front of an upstream; it returns the issuer and the MCP URL.
func clientStack(t *testing.T, asFlags ...string) (issuer, mcpURL string) {
	t.Helper()
	up := newUpstream(t)
	as := startProc(t, append([]string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--consent", "auto", "--scopes", "mcp:tools"}, asFlags...)...)
	issuer = firstURL.FindStringSubmatch(as.ready)[1]
	protect := startProc(t, "protect", "--addr", "127.0.0.1:0", "--upstream", up.srv.URL+"/mcp", "--issuer", issuer,
		"--insecure-http", "--scopes", "mcp:tools", "--require", "mcp:tools")
	return issuer, firstURL.FindStringSubmatch(protect.ready)[1] + "/mcp"
}

// TestE2ETokenRefusalShown: when the token endpoint refuses the client
// after the user approved in the browser (--browser print), `call` ends at
// once with the authorization server's error code and description, asks
// for no second approval and does not wait for --timeout.
func TestE2ETokenRefusalShown(t *testing.T) {
	t.Parallel()
	issuer, u := clientStack(t, "--client", "id=cli,secret=right-secret,redirect=http://127.0.0.1/callback,auth=client_secret_basic")
	r := startBrowserRun(t, "call", "--insecure-http", "--browser", "print", "--timeout", "30s",
		"--store", filepath.Join(t.TempDir(), "tokens.json"),
		"--client-id", "cli", "--client-secret", "wrong-secret", "--issuer", issuer, u, "echo")
	resp, err := http.Get(<-r.authURL) // the browser: automatic consent, then the loopback redirect
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	code, errOut := r.wait(), r.stderr.String()
	if code == 0 || !strings.Contains(errOut, "invalid_client") || !strings.Contains(errOut, "client authentication failed") {
		t.Errorf("exit %d; the authorization server's error is not shown:\n%s", code, errOut)
	}
	if strings.Contains(errOut, "deadline exceeded") || strings.Contains(errOut, "context canceled") {
		t.Errorf("a timeout is reported instead of the refusal:\n%s", errOut)
	}
	if n := strings.Count(errOut, "state="); n != 1 {
		t.Errorf("%d authorization URLs printed, want 1:\n%s", n, errOut)
	}
	// The right secret: client_secret_basic with client_id also in the
	// body (RFC 6749 §3.2.1) is accepted by mcpauth's own server.
	code, out, errOut := runBin(t, "", "login", "--insecure-http", "--browser", "http", "--store", filepath.Join(t.TempDir(), "tokens.json"),
		"--client-id", "cli", "--client-secret", "right-secret", "--issuer", issuer, u)
	if code != 0 || !strings.Contains(out, "logged in") {
		t.Errorf("login with the right secret: %d %s %s", code, out, errOut)
	}
}

// TestE2ETimeoutBoundsApproval: --timeout bounds the wait for the user's
// approval (--browser print, nobody approves): the command stops and says
// why, well before the listener's own five-minute limit.
func TestE2ETimeoutBoundsApproval(t *testing.T) {
	t.Parallel()
	_, u := clientStack(t)
	for _, cmd := range [][]string{{"call"}, {"login"}, {"token"}} {
		args := append(cmd, "--insecure-http", "--browser", "print", "--timeout", "2s",
			"--store", filepath.Join(t.TempDir(), "tokens.json"), u)
		if cmd[0] == "call" {
			args = append(args, "echo")
		}
		r := startBrowserRun(t, args...)
		<-r.authURL // printed; nobody visits it
		code := r.wait()
		if errOut := r.stderr.String(); code != 1 || !strings.Contains(errOut, "gave up after --timeout 2s") {
			t.Errorf("%s: exit %d:\n%s", cmd[0], code, errOut)
		}
	}
}
