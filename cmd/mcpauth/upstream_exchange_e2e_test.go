//go:build e2e

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/resource"
)

// upstreamAPI is a GitHub-like API on 127.0.0.1: GET /user answers the
// caller's login, the sub the OpenID provider's userinfo endpoint gives
// for the bearer token, so only a live token of the provider passes. It
// keeps every token it was sent.
type upstreamAPI struct {
	srv    *httptest.Server
	mu     sync.Mutex
	tokens []string
}

func newUpstreamAPI(t *testing.T, userinfo string) *upstreamAPI {
	a := &upstreamAPI{}
	hc := &http.Client{Timeout: 10 * time.Second}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path != "/user" || !ok || tok == "" {
			http.Error(w, `{"message":"Requires authentication"}`, http.StatusUnauthorized)
			return
		}
		a.mu.Lock()
		a.tokens = append(a.tokens, tok)
		a.mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, userinfo, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			http.Error(w, `{"message":"provider down"}`, http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var claims struct {
			Sub string `json:"sub"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&claims) != nil || claims.Sub == "" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"login": claims.Sub})
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// user calls GET /user with token and returns the login, or the status.
func (a *upstreamAPI) user(ctx context.Context, token string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.srv.URL+"/user", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var u struct {
		Login string `json:"login"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&u) != nil {
		return "", fmt.Errorf("upstream API: %s", resp.Status)
	}
	return u.Login, nil
}

func (a *upstreamAPI) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.tokens...)
}

// userinfoEndpoint reads the provider's discovery document.
func userinfoEndpoint(t *testing.T, issuer string) string {
	t.Helper()
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md struct {
		Userinfo string `json:"userinfo_endpoint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || md.Userinfo == "" {
		t.Fatalf("discovery: %v", err)
	}
	return md.Userinfo
}

// exchangeMCPServer is an MCP server (go-sdk, stateless) whose tools call
// the upstream API as the user with the token resource.Exchanger obtains:
// upstream_user needs mcp:read, upstream_write mcp:write, upstream_admin
// mcp:admin.
func exchangeMCPServer(t *testing.T, issuer, clientSecret string, api *upstreamAPI, srv *httptest.Server, logs io.Writer) {
	t.Helper()
	resourceURL := "http://" + srv.Listener.Addr().String() + "/mcp"
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v, err := resource.New(resource.Config{
		Resource: resourceURL, Issuers: []resource.Issuer{{Issuer: issuer}}, InsecureAllowHTTPLoopback: true,
		ScopesSupported: []string{"mcp:read", "mcp:write", "mcp:admin"}, Logger: logger,
		Policy: &resource.Policy{Default: []string{"mcp:read"},
			Tools: map[string][]string{"upstream_write": {"mcp:write"}, "upstream_admin": {"mcp:admin"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	ex, err := resource.NewExchanger(resource.ExchangeConfig{
		TokenEndpoint: issuer + "/token", ClientID: "mcp-server", ClientSecret: clientSecret,
		HTTPClient: &http.Client{Timeout: 10 * time.Second}, InsecureAllowHTTPLoopback: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream-token", Version: "1"}, nil)
	tool := func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		gh, err := ex.Exchange(ctx, "idp")
		if err != nil {
			logger.Warn("token exchange failed", "status", resource.ExchangeStatus(err), "error", err)
			return nil, nil, fmt.Errorf("token exchange refused (%d)", resource.ExchangeStatus(err))
		}
		login, err := api.user(ctx, gh.AccessToken)
		if err != nil {
			return nil, nil, err
		}
		return textResult("upstream user " + login), nil, nil
	}
	for _, name := range []string{"upstream_user", "upstream_write", "upstream_admin"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, tool)
	}
	mux := http.NewServeMux()
	v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	srv.Config.Handler = mux
	srv.Start()
	t.Cleanup(srv.Close)
}

// headerMCPServer is the MCP server `protect --pass-upstream-token
// X-Upstream-Token` fronts: its tool calls the upstream API with that
// header's value and reports whether an Authorization header came in.
func headerMCPServer(t *testing.T, api *upstreamAPI) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "behind-protect", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "upstream_user"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		login, err := api.user(ctx, req.Extra.Header.Get("X-Upstream-Token"))
		if err != nil {
			return nil, nil, err
		}
		return textResult(fmt.Sprintf("upstream user %s, authorization=%q", login, req.Extra.Header.Get("Authorization"))), nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv
}

// loginAtBroker is the browser of one authorization through the broker:
// our consent page, the provider's login as alice, our callback; it
// returns our redirect to the client's redirect URI.
func loginAtBroker(t *testing.T, opIssuer, issuer, authURL string) *url.URL {
	t.Helper()
	ua := newUserAgent(t)
	back := ua.atProvider(opIssuer, ua.consentAt(issuer, authURL), "alice", issuer+"/upstream/callback")
	resp, body := ua.send(http.MethodGet, back, nil, "")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("iss") != issuer {
		t.Fatalf("callback: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	return loc
}

// reservePort returns a loopback address nothing listens on, for a
// process whose URL must be known before it starts.
func reservePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// exchangeAt performs the RFC 8693 exchange at the token endpoint by hand.
func exchangeAt(t *testing.T, issuer, clientID, secret, subject string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {subject},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}, "audience": {"idp"},
	}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// TestE2EUpstreamTokenExchange: the broker end to end against panva
// oidc-provider. `mcpauth authserver --upstream` (grant policy, vault,
// two exchange clients) logs alice in at the provider; her MCP tools call
// a GitHub-like API on 127.0.0.1 that accepts only the provider's live
// tokens, through (1) an MCP server using resource.Exchanger and (2)
// `mcpauth protect --pass-upstream-token X-Upstream-Token`. Clients: the
// mcpauth CLI (`call`, `--browser print`, the test filling the provider's
// forms) and the official go-sdk client through mcpauth's client
// package, which steps up to mcp:write (the grant policy allows it) and
// to mcp:admin (it does not: the narrowed token draws 403 again). The
// exchange of a token for another resource, and of a revoked one, is
// refused; no process logs a token.
func TestE2EUpstreamTokenExchange(t *testing.T) {
	t.Parallel()
	vaultKey := make([]byte, 32)
	_, _ = rand.Read(vaultKey)
	policy := filepath.Join(t.TempDir(), "grant-policy.json")
	if err := os.WriteFile(policy, []byte(`{"default": ["mcp:read"], "users": {"alice@example.com": ["mcp:write"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpSrv := httptest.NewUnstartedServer(nil) // its address is the resource the AS must know
	mcpURL := "http://" + mcpSrv.Listener.Addr().String() + "/mcp"
	protectAddr := reservePort(t)
	protectURL := "http://" + protectAddr + "/mcp"
	const rsSecret, proxySecret = "rs-secret-for-the-mcp-server", "rs-secret-for-protect"
	tokenExchange := "grant=urn:ietf:params:oauth:grant-type:token-exchange"
	var as *proc
	op := startOIDCProvider(t, func(issuer string) (string, string) {
		as = startProcEnv(t, []string{"E2E_IDP_SECRET=interop-secret", "E2E_VAULT_KEY=" + base64.StdEncoding.EncodeToString(vaultKey),
			"E2E_RS_SECRET=" + rsSecret, "E2E_PROXY_SECRET=" + proxySecret},
			"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--scopes", "mcp:read mcp:write mcp:admin",
			"--upstream", issuer, "--upstream-client-id", "mcpauth", "--upstream-client-secret", "env:E2E_IDP_SECRET",
			"--allow-email-domain", "example.com", "--grant-policy", policy, "--vault-key", "env:E2E_VAULT_KEY",
			"--upstream-audience", "idp", "--log-level", "debug",
			"--client", "id=mcp-server,secret=env:E2E_RS_SECRET,"+tokenExchange, "--exchange-client", "mcp-server="+mcpURL,
			"--client", "id=protect,secret=env:E2E_PROXY_SECRET,"+tokenExchange, "--exchange-client", "protect="+protectURL)
		return strings.TrimSuffix(regexp.MustCompile(`\(issuer (\S+)\)`).FindStringSubmatch(as.ready)[1], "/") + "/upstream/callback", "interop-secret"
	})
	issuer := strings.TrimSuffix(regexp.MustCompile(`\(issuer (\S+)\)`).FindStringSubmatch(as.ready)[1], "/")
	api := newUpstreamAPI(t, userinfoEndpoint(t, op.issuer))
	var mcpLogs syncBuffer
	exchangeMCPServer(t, issuer, rsSecret, api, mcpSrv, &mcpLogs)
	behind := headerMCPServer(t, api)
	protect := startProcEnv(t, []string{"E2E_PROXY_SECRET=" + proxySecret}, "protect", "--addr", protectAddr,
		"--upstream", behind.URL+"/mcp", "--issuer", issuer, "--insecure-http", "--scopes", "mcp:read", "--require", "mcp:read",
		"--pass-upstream-token", "X-Upstream-Token", "--exchange-token-url", issuer+"/token", "--exchange-client-id", "protect",
		"--exchange-client-secret", "env:E2E_PROXY_SECRET", "--upstream-audience", "idp", "--log-level", "debug")

	// (a) The CLI: `call` through protect, and `call` to the MCP server
	// with the Exchanger; the browser logs in at the provider.
	store := filepath.Join(t.TempDir(), "tokens.json")
	cliCall := func(u string) string {
		t.Helper()
		r := startBrowserRun(t, "call", "--insecure-http", "--browser", "print", "--timeout", "60s", "--store", store, u, "upstream_user")
		loc := loginAtBroker(t, op.issuer, issuer, <-r.authURL)
		resp, err := http.Get(loc.String()) // the CLI's loopback listener takes the code
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if code := r.wait(); code != 0 {
			t.Fatalf("call %s: exit %d\n%s\n%s", u, code, r.stdout.String(), r.stderr.String())
		}
		return r.stdout.String()
	}
	if out := cliCall(protectURL); !strings.Contains(out, `upstream user alice, authorization=\"\"`) {
		t.Fatalf("call through protect: %s", out)
	}
	if out := cliCall(mcpURL); !strings.Contains(out, "upstream user alice") {
		t.Fatalf("call with the Exchanger: %s", out)
	}
	code, tokOut, errOut := runBin(t, "", "token", "--insecure-http", "--store", store, protectURL)
	if code != 0 {
		t.Fatalf("token: %d %s", code, errOut)
	}
	protectToken := strings.TrimSpace(tokOut)
	if !strings.Contains(decodeJWTPayload(t, protectToken), `"scope":"mcp:read"`) {
		t.Errorf("the CLI's token: %s", decodeJWTPayload(t, protectToken))
	}

	// (b) The go-sdk client through mcpauth's client package, with step-ups.
	var logins sync.Mutex
	authorizations := 0
	c, err := client.New(client.Config{InsecureAllowHTTPLoopback: true,
		Authorizer: client.AuthorizerFunc(func(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
			authURL, err := req.Start(ctx, client.DefaultRedirectURI)
			if err != nil {
				return nil, err
			}
			logins.Lock()
			authorizations++
			logins.Unlock()
			return loginAtBroker(t, op.issuer, issuer, authURL), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	h, err := c.OAuthHandler(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var session *mcp.ClientSession
	connect := func() {
		t.Helper()
		if session != nil {
			session.Close()
		}
		session, err = mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: mcpURL, OAuthHandler: h, HTTPClient: &http.Client{Timeout: 60 * time.Second}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	connect()
	defer func() { session.Close() }()
	call := func(name string) (string, error) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			return "", errors.New(b.String())
		}
		return b.String(), nil
	}
	if got, err := call("upstream_user"); err != nil || got != "upstream user alice" {
		t.Fatalf("upstream_user: %q %v", got, err)
	}
	if got, err := call("upstream_write"); err != nil || got != "upstream user alice" {
		t.Fatalf("step-up to mcp:write, which the grant policy allows: %q %v", got, err)
	}
	count := func() int {
		logins.Lock()
		defer logins.Unlock()
		return authorizations
	}
	before := count()
	got, err := call("upstream_admin")
	if err == nil {
		t.Fatalf("step-up to mcp:admin, which the grant policy does not allow: %q", got)
	}
	if count() <= before {
		t.Errorf("no step-up authorization for mcp:admin")
	}
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("upstream_admin: %v, want 403", err)
	}
	connect() // the SDK closes a session whose request failed
	if got, err := call("upstream_write"); err != nil || got != "upstream user alice" {
		t.Fatalf("upstream_write after the refused step-up: %q %v", got, err)
	}

	// A token for another resource: the MCP server's client may not
	// exchange the token issued for protect, nor may the MCP server take it.
	if status, body := exchangeAt(t, issuer, "mcp-server", rsSecret, protectToken); status != http.StatusBadRequest ||
		!strings.Contains(body, `"invalid_grant"`) {
		t.Errorf("exchange of another resource's token: %d %s", status, body)
	}
	if status := rawToolsList(t, mcpURL, protectToken); status != http.StatusUnauthorized {
		t.Errorf("another resource's token at the MCP server: %d", status)
	}
	if status, body := exchangeAt(t, issuer, "protect", proxySecret, protectToken); status != http.StatusOK {
		t.Fatalf("exchange by its own resource: %d %s", status, body)
	}

	// Revocation of the CLI's grant at protect's resource: the refresh
	// token the CLI keeps, revoked at the revocation endpoint.
	raw, _ := os.ReadFile(store)
	var claims struct {
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal([]byte(decodeJWTPayload(t, protectToken)), &claims)
	revoke := func(token string) {
		resp, err := http.PostForm(issuer+"/revoke", url.Values{"token": {token}, "client_id": {claims.ClientID}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
	}
	revoked := 0
	for _, m := range regexp.MustCompile(`"refresh_token":\s*"([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		revoke(m[1])
		revoked++
	}
	t.Logf("%d authorizations by the go-sdk client; %d refresh tokens of the CLI revoked", count(), revoked)
	if revoked == 0 {
		t.Fatal("the CLI's token store holds no refresh token to revoke")
	}
	if status, body := exchangeAt(t, issuer, "protect", proxySecret, protectToken); status != http.StatusBadRequest ||
		!strings.Contains(body, `"invalid_grant"`) {
		t.Errorf("exchange after revocation: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, protectURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+protectToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if chal := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(chal, `error="invalid_token"`) {
		t.Errorf("protect after revocation: %d %q", resp.StatusCode, chal)
	}

	// protect logs the refusal before answering, but its stderr reaches the
	// test through a pipe and a copying goroutine: give the line a bounded
	// while to arrive, so that the logs read below are complete.
	for i := 0; i < 300 && !strings.Contains(protect.stderr.String(), "upstream token exchange failed"); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(protect.stderr.String(), "upstream token exchange failed") {
		t.Errorf("protect did not log the refused exchange:\n%s", protect.stderr.String())
	}

	// No token in any log; the upstream API saw only the provider's tokens.
	seen := api.seen()
	if len(seen) == 0 {
		t.Fatal("the upstream API saw no token")
	}
	for _, tok := range seen {
		if tok == protectToken || strings.Count(tok, ".") == 2 && strings.Contains(decodeJWTPayload(t, tok), issuer) {
			t.Errorf("an MCP token reached the upstream API")
		}
	}
	for name, logs := range map[string]string{"authserver": as.stderr.String() + as.stdout.String(),
		"protect": protect.stderr.String() + protect.stdout.String(), "MCP server": mcpLogs.String()} {
		for _, tok := range append(seen, protectToken) {
			if strings.Contains(logs, tok) {
				t.Errorf("%s logged a token (%.8s…)", name, tok)
			}
		}
		if jwtPattern.MatchString(logs) {
			t.Errorf("%s logged a JWT", name)
		}
	}
}
