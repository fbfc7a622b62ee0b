package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	testTenant    = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	testEntraAPI  = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
	testEntraTmpl = "https://login.microsoftonline.com/{tid}/v2.0"
)

// TestProtectIssuerFlags: the --issuer-* flags apply to the --issuer
// before them, each issuer gets its own profile, and a flag out of place,
// repeated or with a bad value is refused naming the flag.
func TestProtectIssuerFlags(t *testing.T) {
	t.Parallel()
	base := []string{"--upstream", "http://127.0.0.1:1/mcp", "--resource", "https://mcp.example.com/mcp"}
	tests := []struct {
		name string
		args []string
		want []resource.Issuer
		err  string
	}{
		{"RFC 9068 issuer keeps the zero profile", []string{"--issuer", "https://as.example"},
			[]resource.Issuer{{Issuer: "https://as.example"}}, ""},
		{"two issuers, each its own profile", []string{
			"--issuer", "https://kc.example/realms/mcp", "--issuer-profile", "keycloak", "--issuer-scope-claims", "scope,realm_access.roles",
			"--issuer-insecure-accept-missing-audience", "--issuer-client", "mcp-client", "--issuer-client", "cli-2,cli-3",
			"--issuer", testEntraTmpl, "--issuer-profile", "entra", "--issuer-audience", testEntraAPI, "--issuer-tenant", testTenant,
			"--issuer-typ", "JWT at+jwt", "--issuer-client-claim", "azp", "--issuer-require", "ver=2.0", "--issuer-require", "acct=0,1"},
			[]resource.Issuer{
				{Issuer: "https://kc.example/realms/mcp", Profile: resource.Profile{Preset: "keycloak", ScopeClaims: []string{"scope", "realm_access.roles"},
					InsecureAcceptMissingAudience: true, ClientIDs: []string{"mcp-client", "cli-2", "cli-3"}}},
				{Issuer: testEntraTmpl, Profile: resource.Profile{Preset: "entra", Audiences: []string{testEntraAPI}, TenantIDs: []string{testTenant},
					Types: []string{"JWT", "at+jwt"}, ClientClaim: "azp",
					RequiredClaims: []resource.RequiredClaim{{Claim: "ver", Values: []string{"2.0"}}, {Claim: "acct", Values: []string{"0", "1"}}}}},
			}, ""},
		{"missing-audience opt-in turned off again", []string{"--issuer", "https://kc.example", "--issuer-client", "c",
			"--issuer-insecure-accept-missing-audience", "--issuer-insecure-accept-missing-audience=false"},
			[]resource.Issuer{{Issuer: "https://kc.example", Profile: resource.Profile{ClientIDs: []string{"c"}}}}, ""},
		{"profile before any issuer", []string{"--issuer-profile", "okta", "--issuer", "https://as.example"}, nil,
			"--issuer-profile must follow the --issuer it applies to"},
		{"bool before any issuer", []string{"--issuer-insecure-accept-missing-audience", "--issuer", "https://as.example"}, nil,
			"must follow the --issuer"},
		{"profile twice for one issuer", []string{"--issuer", "https://as.example", "--issuer-profile", "okta", "--issuer-profile", "hydra"},
			nil, "given twice for --issuer https://as.example"},
		{"unknown profile", []string{"--issuer", "https://as.example", "--issuer-profile", "entrra"}, nil, "--issuer-profile: unknown preset"},
		{"unknown typ", []string{"--issuer", "https://as.example", "--issuer-typ", "jwt"}, nil, "--issuer-typ: \"jwt\" is not"},
		{"empty typ list", []string{"--issuer", "https://as.example", "--issuer-typ", ","}, nil, "--issuer-typ: empty"},
		{"bad scope claim path", []string{"--issuer", "https://as.example", "--issuer-scope-claims", "a..b"}, nil, "-issuer-scope-claims"},
		{"scope claim aud", []string{"--issuer", "https://as.example", "--issuer-scope-claims", "aud"}, nil, "--issuer-scope-claims: \"aud\""},
		{"bad require", []string{"--issuer", "https://as.example", "--issuer-require", "token_use"}, nil, "CLAIM=VALUE"},
		{"missing audience without clients", []string{"--issuer", "https://as.example", "--issuer-profile", "cognito",
			"--issuer-insecure-accept-missing-audience"}, nil, "--issuer-insecure-accept-missing-audience: needs ClientIDs"},
		{"entra without the API's client ID", []string{"--issuer", testEntraTmpl, "--issuer-profile", "entra", "--issuer-tenant", testTenant},
			nil, "--issuer-audience: the entra preset needs"},
		{"template without tenants", []string{"--issuer", testEntraTmpl, "--issuer-profile", "entra", "--issuer-audience", testEntraAPI},
			nil, "--issuer-tenant: an issuer with {tid} needs the tenants"},
		{"tenant common", []string{"--issuer", testEntraTmpl, "--issuer-profile", "entra", "--issuer-audience", testEntraAPI,
			"--issuer-tenant", "common"}, nil, "--issuer-tenant: \"common\" is not a tenant ID"},
		{"plain http template", []string{"--issuer", "http://login.example/{tid}/v2.0"}, nil, "--issuer: http://login.example/"},
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	upstream, _ := url.Parse("http://127.0.0.1:1/mcp")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr syncBuffer
			f, err := parseProtectFlags(append(append([]string{}, base...), tt.args...), &stderr)
			var cfg resource.Config
			if err == nil {
				cfg, err = f.resourceConfig(addr, upstream, slog.New(slog.DiscardHandler))
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.err) {
					t.Fatalf("err = %v (stderr %q), want %q", err, stderr.String(), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Issuers, tt.want) {
				t.Fatalf("issuers %+v\nwant %+v", cfg.Issuers, tt.want)
			}
			if !reflect.DeepEqual([]string(f.issuers), issuerURLs(tt.want)) {
				t.Fatalf("--issuer list %v", f.issuers)
			}
		})
	}
}

func issuerURLs(is []resource.Issuer) []string {
	var out []string
	for _, i := range is {
		out = append(out, i.Issuer)
	}
	return out
}

// TestProtectIssuerProfileServes runs the command in front of an upstream
// with a Keycloak issuer on 127.0.0.1 whose access tokens have no audience
// mapper (typ JWT, no aud, the client in azp, the claim typ Bearer): with
// --issuer-profile keycloak, the missing-audience opt-in and the client
// allow-list, its client's token is served and its identity reaches the
// upstream; another client's token, a token for another audience and an
// ID token are refused with their reasons, and never reach it.
func TestProtectIssuerProfileServes(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "kc-1")
	idp := oauthtest.NewPlainJWKSServer(t, key)
	var mu sync.Mutex
	var seen []http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		okUpstream(w, r)
	}))
	defer up.Close()
	line, stop := startCommand(t, "protect", "--addr", "127.0.0.1:0", "--upstream", up.URL+"/mcp", "--insecure-http",
		"--issuer", idp.Issuer, "--issuer-profile", "keycloak", "--issuer-insecure-accept-missing-audience",
		"--issuer-client", "mcp-client", "--require", "mcp:tools", "--log-level", "error")
	defer func() {
		if code, stderr := stop(); code != 0 {
			t.Errorf("exit %d: %s", code, stderr)
		}
	}()
	addr := strings.Fields(strings.TrimPrefix(line, "listening on "))[0]
	now := time.Now()
	mint := func(mutate func(map[string]any)) string {
		c := map[string]any{"iss": idp.Issuer, "sub": "alice-id", "typ": "Bearer", "azp": "mcp-client", "scope": "openid mcp:tools",
			"preferred_username": "alice", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mutate != nil {
			mutate(c)
		}
		return key.Sign(t, oauthtest.Header{Type: "JWT"}, oauthtest.MustJSON(t, c))
	}
	post := func(token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post(mint(nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("keycloak token without aud: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].Get("X-Forwarded-Client-Id") != "mcp-client" || seen[0].Get("X-Forwarded-User") != "alice-id" ||
		seen[0].Get("Authorization") != "" {
		t.Errorf("upstream saw %v", seen)
	}
	mu.Unlock()
	for _, tt := range []struct {
		name, reason string
		mutate       func(map[string]any)
	}{
		{"another client", "client not accepted", func(c map[string]any) { c["azp"] = "other-client" }},
		{"an audience of another server", "token is not for this resource", func(c map[string]any) { c["aud"] = "account" }},
		{"an ID token", "token is not for this resource", func(c map[string]any) { c["typ"] = "ID"; c["aud"] = "mcp-client" }},
		{"a refresh token's typ", "required claim missing or different", func(c map[string]any) { c["typ"] = "Refresh" }},
	} {
		resp := post(mint(tt.mutate))
		chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
		ch, _ := oauthmeta.FindChallenge(chs, "Bearer")
		if resp.StatusCode != http.StatusUnauthorized || err != nil || ch.Value("error_description") != tt.reason {
			t.Errorf("%s: %d %q, want 401 %q", tt.name, resp.StatusCode, resp.Header.Values("WWW-Authenticate"), tt.reason)
		}
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Errorf("refused tokens reached the upstream: %d requests", len(seen))
	}
	mu.Unlock()
}
