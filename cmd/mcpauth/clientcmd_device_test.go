package main

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	devicePromptURL = regexp.MustCompile(`\(or open (http://\S+)\)`)
	deviceFormField = regexp.MustCompile(`name="(request|csrf_token|user_code)" value="([^"]*)"`)
)

// deviceUser watches what the command writes to stderr and, once the
// device prompt is complete, approves at the verification page like a
// user on another device.
type deviceUser struct {
	t    *testing.T
	mu   sync.Mutex
	buf  strings.Builder
	once sync.Once
	done chan error
}

func (u *deviceUser) Write(p []byte) (int, error) {
	u.mu.Lock()
	u.buf.Write(p)
	m := devicePromptURL.FindStringSubmatch(u.buf.String())
	u.mu.Unlock()
	if m != nil {
		u.once.Do(func() { go func() { u.done <- approveAt(m[1]) }() })
	}
	return len(p), nil
}

func (u *deviceUser) String() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.buf.String()
}

// approveAt follows verification_uri_complete, submits the code and
// approves on the consent page.
func approveAt(complete string) error {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fields := func(resp *http.Response, err error) (url.Values, error) {
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		f := url.Values{}
		for _, m := range deviceFormField.FindAllStringSubmatch(string(body), -1) {
			f.Set(m[1], html.UnescapeString(m[2]))
		}
		return f, nil
	}
	post := func(target string, f url.Values) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		return hc.Do(req)
	}
	page, _, _ := strings.Cut(complete, "?")
	f, err := fields(hc.Get(complete))
	if err != nil {
		return err
	}
	consent, err := fields(post(page, f))
	if err != nil {
		return err
	}
	consent.Set("action", "approve")
	resp, err := post(strings.TrimSuffix(page, "/device")+"/consent", consent)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// TestLoginDevice: `mcpauth login --device` prints the code and the URL
// to stderr, nothing of them to stdout, and logs in once the user
// approved elsewhere.
func TestLoginDevice(t *testing.T) {
	t.Parallel()
	_, u := startDemo(t)
	store := filepath.Join(t.TempDir(), "tokens.json")
	var stdout syncBuffer
	user := &deviceUser{t: t, done: make(chan error, 1)}
	code := run(t.Context(), []string{"login", "--insecure-http", "--store", store, "--device", "--scopes", "mcp:tools", u}, &stdout, user)
	if code != 0 {
		t.Fatalf("login --device: %d %q %s", code, stdout.String(), user.String())
	}
	if err := <-user.done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(user.String(), "enter the code") || strings.Contains(stdout.String(), "/device") {
		t.Fatalf("prompt on the wrong stream: stdout %q stderr %q", stdout.String(), user.String())
	}
	code, out, errOut := runCmd(t, "call", "--insecure-http", "--store", store, "--device", u, "whoami")
	if code != 0 {
		t.Fatalf("call with the device login's token: %d %q %s", code, out, errOut)
	}
}

// TestBridgeDevice: `mcpauth bridge --device` logs in on the first
// request with the device flow; the prompt goes to stderr and stdout
// carries nothing but JSON-RPC.
func TestBridgeDevice(t *testing.T) {
	t.Parallel()
	_, u := startDemo(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	user := &deviceUser{t: t, done: make(chan error, 1)}
	lines := &jsonrpcLines{t: t, w: outW}
	done := make(chan error, 1)
	go func() {
		done <- runBridge(t.Context(), []string{"--insecure-http", "--store", filepath.Join(t.TempDir(), "t.json"), "--device", u},
			inR, lines, user)
		outW.Close()
	}()
	p := &bridgeProc{in: inW, out: outR, done: done}
	got := p.request(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if got["result"] == nil {
		t.Fatalf("initialize: %v; stderr %s", got, user.String())
	}
	if err := <-user.done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(user.String(), "enter the code") {
		t.Fatalf("no prompt on stderr: %s", user.String())
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
