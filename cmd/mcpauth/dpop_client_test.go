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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// demoUpstream serves the demo MCP server (echo, admin_echo, whoami) on
// 127.0.0.1 and returns its MCP URL.
func demoUpstream(t *testing.T) string {
	t.Helper()
	s := demoMCPServer()
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	return up.URL + "/mcp"
}

// TestClientCommandsDPoP: `login --dpop` against `mcpauth authserver` and
// `mcpauth protect --dpop required` gets a DPoP-bound token whose
// generated key is kept with it in the 0600 store; `call --dpop` uses
// both without a new authorization; `token --dpop` prints the token and
// says it is bound (as a bearer token it is refused); and `call` without
// --dpop fails with the DPoP error instead of using a Bearer token. Each
// runs without nonces and with nonces required at both servers
// (`authserver --dpop-nonce`, `protect --dpop-nonce`: RFC 9449 §8 and §9),
// where every proof must carry the nonce the server last gave.
func TestClientCommandsDPoP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		nonces bool
	}{
		{"without nonces", false},
		{"with nonces at both servers", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testClientCommandsDPoP(t, tc.nonces)
		})
	}
}

func testClientCommandsDPoP(t *testing.T, nonces bool) {
	var nonceFlag []string
	if nonces {
		nonceFlag = []string{"--dpop-nonce"}
	}
	issuer := startAuthserver(t, append([]string{"--insecure-http", "--consent", "auto", "--scopes", "mcp:tools"}, nonceFlag...)...)
	rs := startSubcommand(t, append([]string{"protect", "--addr", "127.0.0.1:0", "--upstream", demoUpstream(t), "--issuer", issuer,
		"--insecure-http", "--scopes", "mcp:tools", "--require", "mcp:tools", "--dpop", "required", "--log-level", "warn"}, nonceFlag...)...)
	u := rs + "/mcp"
	store := filepath.Join(t.TempDir(), "tokens.json")
	cmd := func(name string, rest ...string) []string {
		return append([]string{name, "--insecure-http", "--store", store, "--browser", "http", "--log-level", "info"}, rest...)
	}

	code, out, errOut := runCmd(t, cmd("login", "--dpop", u)...)
	if code != 0 || !strings.Contains(out, "DPoP-bound to key") || !strings.Contains(errOut, "msg=authorized") {
		t.Fatalf("login --dpop: %d %q %s", code, out, errOut)
	}
	fi, err := os.Stat(store)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store %v %v", fi, err)
	}
	data, _ := os.ReadFile(store)
	var doc struct {
		Tokens []struct {
			Token struct {
				TokenType string          `json:"token_type"`
				DPoPJKT   string          `json:"dpop_jkt"`
				DPoPKey   json.RawMessage `json:"dpop_key"`
			} `json:"token"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Tokens) != 1 {
		t.Fatalf("store: %v", err)
	}
	if tk := doc.Tokens[0].Token; tk.TokenType != "DPoP" || tk.DPoPJKT == "" || !strings.Contains(string(tk.DPoPKey), `"ES256"`) || !strings.Contains(string(tk.DPoPKey), `"d"`) {
		t.Fatalf("stored token: type %q jkt %q key stored %v", tk.TokenType, tk.DPoPJKT, len(tk.DPoPKey) > 0)
	}

	code, out, errOut = runCmd(t, cmd("call", "--dpop", u, "echo", "--args", `{"message":"bound"}`)...)
	if code != 0 || !strings.Contains(out, `"text": "bound"`) {
		t.Fatalf("call --dpop: %d %q %s", code, out, errOut)
	}
	if strings.Contains(errOut, "msg=authorized") {
		t.Errorf("call --dpop authorized again instead of using the stored key:\n%s", errOut)
	}

	code, tok, errOut := runCmd(t, cmd("token", "--dpop", u)...)
	tok = strings.TrimSpace(tok)
	if code != 0 || strings.Count(tok, ".") != 2 || !strings.Contains(errOut, "This token is DPoP-bound") {
		t.Fatalf("token --dpop: %d %s", code, errOut)
	}
	if status := rawToolsList(t, u, tok); status != http.StatusUnauthorized {
		t.Errorf("the DPoP-bound token as a bearer token: %d, want 401", status)
	}

	code, _, errOut = runCmd(t, cmd("call", u, "echo", "--args", `{"message":"bearer"}`)...)
	if code == 0 || !strings.Contains(errOut, "accepts only DPoP-bound tokens") {
		t.Fatalf("call without --dpop: %d %s", code, errOut)
	}
}

// TestLoginDPoPKeyRefused: a --dpop-key whose algorithm the resource
// does not accept (`protect --dpop required --dpop-algs ES256`, a P-384
// key) ends `login` with the DPoP error after discovery: the test fails
// if anything but the authorization server's metadata is requested.
func TestLoginDPoPKeyRefused(t *testing.T) {
	t.Parallel()
	as := oauthtest.NewAS(t, oauthtest.ASOptions{DPoPAlgs: []string{"ES256", "ES384"}})
	as.Update(func(o *oauthtest.ASOptions) { o.JWKSURI = as.URL + "/jwks.json" })
	rs := startSubcommand(t, "protect", "--addr", "127.0.0.1:0", "--upstream", demoUpstream(t), "--issuer", as.URL,
		"--insecure-http", "--dpop", "required", "--dpop-algs", "ES256", "--log-level", "warn")
	dir := t.TempDir()
	keyFile := writeECKey(t, dir, elliptic.P384())
	code, out, errOut := runCmd(t, "login", "--insecure-http", "--store", filepath.Join(dir, "t.json"), "--browser", "http",
		"--dpop-key", keyFile, rs+"/mcp")
	if code == 0 || !strings.Contains(errOut, "requires DPoP-bound tokens") || !strings.Contains(errOut, "ES384") {
		t.Fatalf("login: %d %q %s", code, out, errOut)
	}
	for _, p := range as.Paths() {
		if !strings.HasPrefix(p, "/.well-known/") {
			t.Fatalf("authorization server hit at %s; only its metadata may be fetched", p)
		}
	}
}

// writeECKey writes a new ECDSA private key on curve to dir/dpop.pem, in
// the PKCS #8 PEM form --dpop-key reads, and returns that path.
func writeECKey(t *testing.T, dir string, curve elliptic.Curve) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dpop.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
