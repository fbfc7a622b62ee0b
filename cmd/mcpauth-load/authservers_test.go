package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/testdb"
)

// TestRunAuthserversShort runs -authservers for a fraction of a second
// per workload against a freshly built `mcpauth authserver`, and beside it
// the token floor (this test binary as `peer token-floor`) and Ory Hydra
// (on PostgreSQL) and oidc-provider when they are installed (make hydra,
// make interop-tools): every client-credentials grant, refresh-token rotation
// and complete login of mcpauth answered as it must be, and the tables and
// the CPU comparison with the floor printed.
func TestRunAuthserversShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds ./cmd/mcpauth")
	}
	bin, err := loadgen.BuildMcpauth(context.Background(), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	servers := []string{"mcpauth", "floor"}
	var extra []string
	root := moduleRoot()
	if _, err := os.Stat(filepath.Join(root, "tools", "hydra", "bin", "hydra")); err == nil {
		// On a throwaway PostgreSQL, which Hydra's own migration prepares.
		servers = append(servers, "hydra")
		extra = append(extra, "-hydra-dsn", testdb.StartPostgres(t).NewDatabase(t))
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "interop", "node_modules", "oidc-provider")); err == nil {
		servers = append(servers, "oidc-provider")
	}
	var out, errOut bytes.Buffer
	args := append([]string{"-authservers", strings.Join(servers, ","), "-mcpauth", bin, "-c", "2", "-rounds", "1", "-round", "300ms", "-sig-samples", "50"}, extra...)
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	for _, g := range grantKinds {
		if !strings.Contains(out.String(), "\n"+g+": ") {
			t.Errorf("no %s table:\n%s", g, out.String())
		}
	}
	for _, want := range []string{"reference: one ES256 signature", "load average: ", "mcpauth ÷ floor x", "floor ÷ ES256 x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunAuthserversBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-authservers", "hydra,mcpauth"},
		{"-authservers", "mcpauth", "-grants", "password"},
		{"-authservers", "mcpauth", "-hydra-alg", "HS256"},
		{"-authservers", "mcpauth,mcpauth-before"}, // without -mcpauth-before REF
		{"-authservers", "mcpauth,nginx"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 1 {
			t.Errorf("%v: exit %d, want 1: %s", args, code, errOut.String())
		}
	}
}

func TestParseForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, page, action string
		fields             url.Values
		err                bool
	}{
		{name: "consent page",
			page: `<form method="post" action="/consent">
    <input type="hidden" name="request" value="l0o8">
    <input type="hidden" name="csrf_token" value="5p&amp;q">
    <button type="submit" name="action" value="approve">Approve</button></form>`,
			action: "/consent", fields: url.Values{"request": {"l0o8"}, "csrf_token": {"5p&q"}}},
		{name: "no fields", page: `<form method="post" action="/interaction/x"><button>Go</button></form>`,
			action: "/interaction/x", fields: url.Values{}},
		{name: "text input ignored", page: `<form method="POST" action="/a"><input type="text" name="u" value="v"></form>`,
			action: "/a", fields: url.Values{}},
		{name: "no form", page: `<p>error</p>`, err: true},
		{name: "two forms", page: `<form method="post" action="/a"></form><form method="post" action="/b"></form>`, err: true},
		{name: "a GET form", page: `<form method="get" action="/a"></form>`, err: true},
		{name: "no action", page: `<form method="post"></form>`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action, fields, err := parseForm([]byte(tc.page))
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %t", err, tc.err)
			}
			if !tc.err && (action != tc.action || !reflect.DeepEqual(fields, tc.fields)) {
				t.Errorf("got %q %v, want %q %v", action, fields, tc.action, tc.fields)
			}
		})
	}
}

// TestTokenChecks: the checks of a token answer refuse what a wrong
// server would send, and accept a right one.
func TestTokenChecks(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const issuer = "http://127.0.0.1:9"
	mint := func(k *ecdsa.PrivateKey, claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": issuer, "sub": "alice", "client_id": "app", "exp": time.Now().Add(time.Hour).Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	good := mint(key, claims(nil))
	a := &authServer{issuer: issuer, keys: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}}}
	w := want{sub: "alice", clientID: "app", refresh: true, old: "rt1", verify: true}
	for _, tc := range []struct {
		name string
		ans  asAnswer
		ok   bool
	}{
		{"right", asAnswer{AccessToken: good, TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, true},
		{"token_type", asAnswer{AccessToken: good, TokenType: "DPoP", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"no expires_in", asAnswer{AccessToken: good, TokenType: "bearer", RefreshToken: "rt2"}, false},
		{"not a JWT", asAnswer{AccessToken: "opaque", TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"another key", asAnswer{AccessToken: mint(other, claims(nil)), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"another issuer", asAnswer{AccessToken: mint(key, claims(func(c map[string]any) { c["iss"] = "http://127.0.0.1:8" })), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"another subject", asAnswer{AccessToken: mint(key, claims(func(c map[string]any) { c["sub"] = "bob" })), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"another client", asAnswer{AccessToken: mint(key, claims(func(c map[string]any) { c["client_id"] = "cc" })), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"expired", asAnswer{AccessToken: mint(key, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"no exp", asAnswer{AccessToken: mint(key, claims(func(c map[string]any) { delete(c, "exp") })), TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt2"}, false},
		{"no refresh token", asAnswer{AccessToken: good, TokenType: "Bearer", ExpiresIn: 900}, false},
		{"the same refresh token", asAnswer{AccessToken: good, TokenType: "Bearer", ExpiresIn: 900, RefreshToken: "rt1"}, false},
	} {
		if err := a.check(&tc.ans, w); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %t", tc.name, err, tc.ok)
		}
	}
}

// TestHydraPool: a PostgreSQL URL gets a pool for the workers unless it
// names one; memory stays as it is; anything else is refused.
func TestHydraPool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dsn, want string
		wantErr   bool
	}{
		{"memory", "memory", false},
		{"postgres://u@127.0.0.1:5432/h?sslmode=disable", "postgres://u@127.0.0.1:5432/h?max_conns=32&max_idle_conns=32&sslmode=disable", false},
		{"postgresql://u@127.0.0.1/h?max_conns=5", "postgresql://u@127.0.0.1/h?max_conns=5&max_idle_conns=32", false},
		{"mysql://u@127.0.0.1/h", "", true},
		{"sqlite:///tmp/h.db", "", true},
	} {
		got, err := hydraPool(tc.dsn, 8)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("hydraPool(%q) = %q, %v; want %q", tc.dsn, got, err, tc.want)
		}
	}
}
