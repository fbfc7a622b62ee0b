package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// storedToken reads the token `login` kept in store for the MCP server u.
func storedToken(t *testing.T, store, u string) (*tokenstore.Registration, *tokenstore.Token) {
	t.Helper()
	ctx := context.Background()
	f, err := tokenstore.NewFile(store)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Discovery(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := f.Registration(ctx, d.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := f.Token(ctx, tokenstore.Key{Issuer: d.Issuer, Resource: d.ResourceIndicator, ClientID: reg.ClientID})
	if errors.Is(err, tokenstore.ErrNotFound) {
		return reg, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return reg, tok
}

// TestLogoutCommandRevokes: `mcpauth logout` revokes the refresh token at
// the demo's authorization server, which then refuses it, and forgets the
// token; with the authorization server gone, the revocation fails, and
// logout warns on stderr, forgets the token and still succeeds.
func TestLogoutCommandRevokes(t *testing.T) {
	t.Parallel()
	line, stop := startCommand(t, "demo", "--no-client", "--addr-as", "127.0.0.1:0", "--addr-mcp", "127.0.0.1:0")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	m := demoReady.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("ready line %q", line)
	}
	issuer, u := m[1], m[2]
	store := filepath.Join(t.TempDir(), "tokens.json")
	cmd := func(name string) []string {
		return []string{name, "--insecure-http", "--store", store, "--browser", "http", u}
	}

	if code, out, errOut := runCmd(t, cmd("login")...); code != 0 {
		t.Fatalf("login: %d %q %s", code, out, errOut)
	}
	reg, tok := storedToken(t, store, u)
	if tok == nil || tok.RefreshToken == "" {
		t.Fatalf("login kept no refresh token: %v", tok)
	}
	code, out, errOut := runCmd(t, cmd("logout")...)
	if code != 0 || !strings.Contains(out, "logged out") || strings.Contains(errOut, "warning") {
		t.Fatalf("logout: %d %q %s", code, out, errOut)
	}
	if _, left := storedToken(t, store, u); left != nil {
		t.Fatal("the token is still stored after logout")
	}
	form := url.Values{"grant_type": {oauthmeta.GrantTypeRefreshToken}, "refresh_token": {tok.RefreshToken}, "client_id": {reg.ClientID}}
	resp, err := http.PostForm(issuer+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("the refresh token still works after logout: %d", resp.StatusCode)
	}

	// The authorization server is unreachable: a warning, not a failure.
	if code, out, errOut := runCmd(t, cmd("login")...); code != 0 {
		t.Fatalf("login again: %d %q %s", code, out, errOut)
	}
	stopped = true
	if code, errOut := stop(); code != 0 {
		t.Fatalf("demo exit %d: %s", code, errOut)
	}
	code, out, errOut = runCmd(t, cmd("logout")...)
	if code != 0 || !strings.Contains(out, "logged out") || !strings.Contains(errOut, "warning") ||
		!strings.Contains(errOut, "revocation") {
		t.Fatalf("logout with the authorization server gone: %d %q %s", code, out, errOut)
	}
	if _, left := storedToken(t, store, u); left != nil {
		t.Fatal("the token is still stored after a logout whose revocation failed")
	}
	for _, s := range []string{out, errOut} {
		if jwtPattern.MatchString(s) {
			t.Error("a token was printed by logout")
		}
	}
}
