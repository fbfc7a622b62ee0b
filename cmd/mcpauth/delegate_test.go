package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestDelegateCommand: `mcpauth delegate` turns a parent token into a
// narrower one bound to the actor's DPoP key, and refuses incomplete
// flags with a usage error.
func TestDelegateCommand(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	as, err := authserver.New(authserver.Config{Issuer: issuer, InsecureAllowHTTPLoopback: true,
		Scopes: []string{"mcp:read", "mcp:write"}, DPoP: &authserver.DPoPConfig{}, Delegation: &authserver.DelegationConfig{},
		Clients: []authserver.Client{{ID: "host", Secret: "host-secret", GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = as
	srv.Start()
	t.Cleanup(func() { srv.Close(); _ = as.Close() })

	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(url.Values{
		"grant_type": {oauthmeta.GrantTypeClientCredentials}, "scope": {"mcp:read mcp:write"}, "resource": {"https://mcp.example.com/mcp"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("host", "host-secret")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var host oauthmeta.TokenResponse
	_ = json.NewDecoder(resp.Body).Decode(&host)
	resp.Body.Close()
	if host.AccessToken == "" {
		t.Fatalf("host token: %d", resp.StatusCode)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "dpop.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCmd(t, "delegate", "--insecure-http", "--token-endpoint", issuer+"/token",
		"--subject-token", host.AccessToken, "--actor-dpop-key", keyFile, "--scopes", "mcp:read", "--lifetime", "1m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var claims struct {
		Scope string          `json:"scope"`
		Act   json.RawMessage `json:"act"`
		Cnf   json.RawMessage `json:"cnf"`
	}
	if err := jwtverify.UnsafeClaimsWithoutVerification(strings.TrimSpace(out), &claims); err != nil {
		t.Fatalf("stdout is not a JWT: %q", out)
	}
	if claims.Scope != "mcp:read" || !strings.Contains(string(claims.Act), "jwk-thumbprint") || len(claims.Cnf) == 0 ||
		!strings.Contains(errOut, "DPoP-bound") {
		t.Errorf("claims %+v, stderr %q", claims, errOut)
	}
	// Widening is the server's refusal, exit status 1.
	if code, _, errOut := runCmd(t, "delegate", "--insecure-http", "--token-endpoint", issuer+"/token",
		"--subject-token", host.AccessToken, "--actor-dpop-key", keyFile, "--scopes", "mcp:admin"); code != 1 ||
		!strings.Contains(errOut, "invalid_scope") {
		t.Errorf("widening: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{
		{"delegate", "--subject-token", "x"},
		{"delegate", "--token-endpoint", issuer + "/token", "--subject-token", "x"},
		{"delegate", "--token-endpoint", issuer + "/token", "--subject-token", "x", "--actor-client-id", "a"},
		{"delegate", "--token-endpoint", issuer + "/token", "--subject-token", "x", "--actor-jwt", "f", "--actor-client-id", "a"},
	} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
