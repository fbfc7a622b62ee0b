package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestAuthserverGrantsCommand runs `mcpauth authserver --admin-token` and
// `mcpauth authserver grants list|revoke` against it: the listing shows
// the grant a client obtained, revoking ends it (its access token turns
// inactive at introspection), and a wrong admin token is refused.
func TestAuthserverGrantsCommand(t *testing.T) {
	t.Setenv("MCPAUTH_TEST_ADMIN", "admin-token-0123456789abcdef0123456789")
	t.Setenv("MCPAUTH_TEST_WRONG_ADMIN", "admin-token-0123456789abcdef012345678X")
	line, stop := startCommand(t, "authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--log-level", "warn",
		"--admin-token", "env:MCPAUTH_TEST_ADMIN", "--client", "id=svc,secret=svc-secret,grant=client_credentials")
	defer stop()
	issuer := strings.Fields(strings.TrimPrefix(line, "listening on "))[0]

	post := func(path string, form url.Values) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, issuer+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("svc", "svc-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	tok, _ := post("/token", url.Values{"grant_type": {"client_credentials"}})["access_token"].(string)
	if tok == "" {
		t.Fatal("no token")
	}
	grants := func(args ...string) (int, string, string) {
		var stdout, stderr syncBuffer
		code := run(context.Background(), append([]string{"authserver", "grants"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	common := []string{"--issuer", issuer, "--insecure-http", "--sub", "svc"}
	code, out, errOut := grants(append([]string{"list", "--admin-token", "env:MCPAUTH_TEST_ADMIN"}, common...)...)
	var l authserver.AdminListing
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Grants) != 1 || l.Grants[0].ClientID != "svc" || l.Grants[0].Revoked {
		t.Fatalf("list: exit %d %s %s", code, out, errOut)
	}
	if strings.Contains(out, tok) {
		t.Fatal("the listing holds the token")
	}
	if code, _, errOut := grants(append([]string{"revoke", "--admin-token", "env:MCPAUTH_TEST_WRONG_ADMIN"}, common...)...); code != 1 || !strings.Contains(errOut, "401") {
		t.Fatalf("wrong admin token: exit %d %s", code, errOut)
	}
	if active := post("/introspect", url.Values{"token": {tok}})["active"]; active != true {
		t.Fatalf("before revocation: active %v", active)
	}
	code, out, errOut = grants(append([]string{"revoke", "--admin-token", "env:MCPAUTH_TEST_ADMIN"}, common...)...)
	if code != 0 || !strings.Contains(out, `"revoked_grants": 1`) {
		t.Fatalf("revoke: exit %d %s %s", code, out, errOut)
	}
	if active := post("/introspect", url.Values{"token": {tok}})["active"]; active != false {
		t.Fatalf("after revocation: active %v", active)
	}
	if code, _, _ := grants("list", "--issuer", issuer, "--sub", "svc"); code != 2 {
		t.Fatalf("no admin token: exit %d, want 2 (usage)", code)
	}
}
