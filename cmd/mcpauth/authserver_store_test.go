package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

const testKEKFlag = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="

// TestAuthserverDatabaseFlagErrors: --database-url without a usable
// key-encryption key, or with --data-dir, stops before serving.
func TestAuthserverDatabaseFlagErrors(t *testing.T) {
	t.Setenv("MCPAUTH_TEST_EMPTY", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no key", []string{"--database-url", "postgres://127.0.0.1:1/x"}, "needs --key-encryption-key"},
		{"short key", []string{"--database-url", "postgres://127.0.0.1:1/x", "--key-encryption-key", "AAAA"}, "want 32"},
		{"empty env", []string{"--database-url", "env:MCPAUTH_TEST_EMPTY", "--key-encryption-key", testKEKFlag}, "is empty"},
		{"nonce key without nonces", []string{"--dpop-nonce-key", testKEKFlag}, "needs --dpop-nonce"},
		{"short nonce key", []string{"--dpop-nonce", "--dpop-nonce-key", "AAAA"}, "at least 32 bytes"},
		{"with data dir", []string{"--database-url", "postgres://127.0.0.1:1/x", "--key-encryption-key", testKEKFlag, "--data-dir", t.TempDir()}, "exclusive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr syncBuffer
			args := append([]string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http"}, tc.args...)
			if code := run(context.Background(), args, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// startAuthserver runs `mcpauth authserver args...` until the test ends
// and returns the base URL it listens on.
func startAuthserver(t *testing.T, args ...string) string {
	t.Helper()
	return startSubcommand(t, append([]string{"authserver", "--addr", "127.0.0.1:0"}, args...)...)
}

// startAuthserverIssuer runs `mcpauth authserver --addr 127.0.0.1:0
// args...` in-process and returns the issuer from its ready line, and stop,
// which ends it and returns its exit code and stderr.
func startAuthserverIssuer(t *testing.T, args ...string) (issuer string, stop func() (int, string)) {
	t.Helper()
	line, stopOnce := startCommand(t, append([]string{"authserver", "--addr", "127.0.0.1:0"}, args...)...)
	stop = sync.OnceValues(stopOnce)
	t.Cleanup(func() { stop() })
	issuer = strings.TrimSuffix(strings.TrimSpace(line[strings.Index(line, "(issuer ")+len("(issuer "):]), ")")
	return issuer, stop
}

// authserverConfig returns the configuration `mcpauth authserver args...`
// builds for the listen address 127.0.0.1:9000, and the error of building
// it or of authserver.New with it.
func authserverConfig(t *testing.T, args []string) (authserver.Config, error) {
	t.Helper()
	f, err := parseAuthserverFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}, nil)
	if err == nil {
		var as *authserver.Server
		if as, err = authserver.New(cfg); err == nil {
			_ = as.Close()
		}
	}
	return cfg, err
}

// wantConfigErr fails t unless err is what want names: an
// authserver.ErrConfig for "config", an error containing want for any
// other text, no error for "". It reports whether there is a configuration
// to check further (want "" and no error).
func wantConfigErr(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "config":
		if !errors.Is(err, authserver.ErrConfig) {
			t.Fatalf("err = %v, want ErrConfig", err)
		}
	case want != "":
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	case err != nil:
		t.Fatal(err)
	}
	return want == ""
}

// startSubcommand runs `mcpauth args...` in-process until the test ends
// and returns the base URL from its "listening on" line.
func startSubcommand(t *testing.T, args ...string) string {
	t.Helper()
	ready, stop := startCommand(t, args...)
	t.Cleanup(func() { stop() })
	addr, _, _ := strings.Cut(strings.TrimPrefix(ready, "listening on "), " ")
	return addr
}

// TestAuthserverDatabaseURL: two `mcpauth authserver` processes on one
// database (URL from the environment) share state: a code issued by one is
// redeemed at the other, once, and both publish the same signing key.
func TestAuthserverDatabaseURL(t *testing.T) {
	pg := testdb.StartPostgres(t)
	t.Setenv("MCPAUTH_TEST_DB", pg.NewDatabase(t))
	t.Setenv("MCPAUTH_TEST_KEK", testKEKFlag)
	const issuer = "http://127.0.0.1:9"
	common := []string{"--issuer", issuer, "--insecure-http", "--consent", "auto",
		"--database-url", "env:MCPAUTH_TEST_DB", "--key-encryption-key", "env:MCPAUTH_TEST_KEK",
		"--client", "id=app,redirect=http://127.0.0.1:1/callback"}
	a, b := startAuthserver(t, common...), startAuthserver(t, common...)
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	jwks := func(base string) string {
		resp, err := hc.Get(base + "/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if ka, kb := jwks(a), jwks(b); ka != kb || !strings.Contains(ka, `"kid"`) {
		t.Fatalf("the replicas publish different key sets:\n%s\n%s", ka, kb)
	}

	v := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "state": {"s"},
		"redirect_uri": {"http://127.0.0.1:1/callback"}, "code_challenge": {pkce.Challenge(v)}, "code_challenge_method": {"S256"}}
	resp, err := hc.Get(a + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if code == "" || loc.Query().Get("iss") != issuer {
		t.Fatalf("authorize at the first replica: %d %s", resp.StatusCode, loc)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {v},
		"client_id": {"app"}, "redirect_uri": {"http://127.0.0.1:1/callback"}}
	for i, want := range []int{http.StatusOK, http.StatusBadRequest} {
		resp, err := hc.PostForm(b+"/token", form)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			AccessToken string `json:"access_token"`
			Error       string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK) != (body.AccessToken != "") ||
			(want != http.StatusOK && body.Error != string(oauthmeta.CodeInvalidGrant)) {
			t.Fatalf("redemption %d at the second replica: %d %+v, want %d", i+1, resp.StatusCode, body, want)
		}
	}
}

// TestAuthserverDataDir: with --data-dir the command creates the
// directory (0700) and its bbolt file (0600), and a second process on the
// same directory publishes the same signing key; while one runs, another
// cannot open the file.
func TestAuthserverDataDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	args := []string{"authserver", "--addr", "127.0.0.1:0", "--issuer", "http://127.0.0.1:9", "--insecure-http", "--data-dir", dir}
	jwks := func(base string) string {
		resp, err := http.Get(base + "/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	start := func() (keys string, stop func() (int, string)) {
		ready, stop := startCommand(t, args...)
		addr, _, _ := strings.Cut(strings.TrimPrefix(ready, "listening on "), " ")
		return jwks(addr), stop
	}
	first, stop := start()
	if code, errOut := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, "authserver.db"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode()&(os.ModeDir|os.ModePerm) != want {
			t.Errorf("%s: %v, %v; want mode %v", path, fi, err, want)
		}
	}
	second, stop := start()
	defer stop()
	if first != second || !strings.Contains(first, `"kid"`) {
		t.Fatalf("the key set changed across the restart:\n%s\n%s", first, second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stderr strings.Builder
	if code := run(ctx, args, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), "authserver.db") {
		t.Fatalf("a second process on the open file: exit %d, %s", code, stderr.String())
	}
}
