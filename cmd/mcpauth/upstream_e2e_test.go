//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/pkce"
)

// oidcProvider is panva oidc-provider started by tools/interop/oidc.mjs.
type oidcProvider struct {
	issuer string
}

// startOIDCProvider starts oidc.mjs, registers callback with secret as its
// one client, and waits until it serves; env is added to its environment.
func startOIDCProvider(t *testing.T, register func(issuer string) (callback, secret string), env ...string) *oidcProvider {
	t.Helper()
	needInteropTools(t, "oidc-provider")
	node, err := filepath.Abs(interopNode)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "oidc.mjs")
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), env...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	lines := make(chan string, 2)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if ok {
				return l
			}
		case <-time.After(30 * time.Second):
		}
		t.Fatalf("oidc.mjs stopped or is silent; stderr: %s", stderr.String())
		return ""
	}
	p := &oidcProvider{issuer: next()}
	callback, secret := register(p.issuer)
	if _, err := io.WriteString(stdin, callback+" "+secret+"\n"); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "ready" {
		t.Fatalf("oidc.mjs: %q", l)
	}
	return p
}

var formAction = regexp.MustCompile(`<form[^>]*action="([^"]*)"`)
var hiddenInput = regexp.MustCompile(`name="(request|csrf_token)" value="([^"]*)"`)

// userAgent is a browser: a cookie jar, redirects followed by hand.
type userAgent struct {
	t *testing.T
	c *http.Client
}

func newUserAgent(t *testing.T) *userAgent {
	jar, _ := cookiejar.New(nil)
	return &userAgent{t: t, c: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (u *userAgent) send(method, target string, form url.Values, origin string) (*http.Response, string) {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

// consent loads our authorization endpoint, approves our consent page and
// returns where it sends the browser: the provider.
func (u *userAgent) consent(issuer string, q url.Values) string {
	u.t.Helper()
	return u.consentAt(issuer, issuer+"/authorize?"+q.Encode())
}

// consentAt is consent for the authorization URL a client built.
func (u *userAgent) consentAt(issuer, authURL string) string {
	u.t.Helper()
	resp, body := u.send(http.MethodGet, authURL, nil, "")
	if resp.StatusCode != http.StatusOK {
		u.t.Fatalf("authorize: %d %s", resp.StatusCode, body)
	}
	form := url.Values{"action": {"approve"}}
	for _, m := range hiddenInput.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	resp, body = u.send(http.MethodPost, issuer+"/consent", form, issuer)
	if resp.Header.Get("Location") == "" {
		u.t.Fatalf("consent: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// atProvider follows the provider's redirects from target, logging in as
// login and approving its consent form, until it redirects to stop (our
// callback); it returns that URL.
func (u *userAgent) atProvider(provider, target, login, stop string) string {
	u.t.Helper()
	for range 20 {
		if strings.HasPrefix(target, stop) {
			return target
		}
		resp, body := u.send(http.MethodGet, target, nil, "")
		if loc := resp.Header.Get("Location"); loc != "" {
			next, _ := resp.Request.URL.Parse(loc)
			target = next.String()
			continue
		}
		m := formAction.FindStringSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			u.t.Fatalf("provider page %s: %d %s", target, resp.StatusCode, body)
		}
		action, _ := resp.Request.URL.Parse(html.UnescapeString(m[1]))
		form := url.Values{"prompt": {"consent"}}
		if strings.Contains(body, `name="login"`) {
			form = url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}}
		}
		resp, body = u.send(http.MethodPost, action.String(), form, provider)
		loc := resp.Header.Get("Location")
		if loc == "" {
			u.t.Fatalf("provider form: %d %s", resp.StatusCode, body)
		}
		next, _ := resp.Request.URL.Parse(loc)
		target = next.String()
	}
	u.t.Fatalf("no redirect to %s", stop)
	return ""
}

// TestE2EUpstreamOIDCProvider: `mcpauth authserver --upstream` in front of
// a real, independent OpenID provider (panva oidc-provider, pinned in
// tools/interop): an MCP client's authorization request goes through our
// consent page, the provider's login and consent forms and our callback,
// and ends with our code and an access token for the upstream user. Then
// the confused-deputy replay (CVE-2026-27124) against the same provider: a
// victim logged in upstream who opens the URL captured by an attacker gets
// an error page, no code.
func TestE2EUpstreamOIDCProvider(t *testing.T) {
	t.Parallel()
	var as *proc
	op := startOIDCProvider(t, func(issuer string) (string, string) {
		as = startProcEnv(t, []string{"E2E_IDP_SECRET=interop-secret"}, "authserver", "--addr", "127.0.0.1:0",
			"--insecure-http", "--upstream", issuer, "--upstream-client-id", "mcpauth",
			"--upstream-client-secret", "env:E2E_IDP_SECRET", "--upstream-scopes", "openid email profile groups",
			"--allow-email-domain", "example.com", "--client", "id=mcp-client,redirect=http://127.0.0.1:1/callback")
		m := regexp.MustCompile(`\(issuer (\S+)\)`).FindStringSubmatch(as.ready)
		if m == nil {
			t.Fatalf("ready line %q", as.ready)
		}
		return m[1] + "/upstream/callback", "interop-secret"
	})
	issuer := strings.TrimSuffix(regexp.MustCompile(`\(issuer (\S+)\)`).FindStringSubmatch(as.ready)[1], "/")
	callback := issuer + "/upstream/callback"
	const clientCB = "http://127.0.0.1:1/callback"
	verifier := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB},
		"state": {"client-state"}, "scope": {"mcp:read"}, "code_challenge": {pkce.Challenge(verifier)},
		"code_challenge_method": {"S256"}}

	alice := newUserAgent(t)
	back := alice.atProvider(op.issuer, alice.consent(issuer, q), "alice", callback)
	resp, body := alice.send(http.MethodGet, back, nil, "")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc == nil || !strings.HasPrefix(loc.String(), clientCB) || loc.Query().Get("code") == "" ||
		loc.Query().Get("state") != "client-state" || loc.Query().Get("iss") != issuer {
		t.Fatalf("callback: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	tresp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"authorization_code"},
		"code": {loc.Query().Get("code")}, "code_verifier": {verifier}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB}})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	_ = json.NewDecoder(tresp.Body).Decode(&tok)
	tresp.Body.Close()
	parts := strings.Split(tok.AccessToken, ".")
	if tresp.StatusCode != http.StatusOK || len(parts) != 3 {
		t.Fatalf("token: %d", tresp.StatusCode)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(payload, &claims)
	if want := upstream.Subject(op.issuer, "alice"); claims["sub"] != want || tok.Scope != "mcp:read" {
		t.Fatalf("token sub %v scope %q, want %s", claims["sub"], tok.Scope, want)
	}
	t.Logf("upstream %s, our issuer %s: access token sub %v, scope %q", op.issuer, issuer, claims["sub"], tok.Scope)

	// CVE-2026-27124: the attacker consents for their client and captures
	// the upstream URL; the victim, logged in at the provider, opens it.
	attacker, victim := newUserAgent(t), alice
	q.Set("state", "attacker-state")
	captured := attacker.consent(issuer, q)
	back = victim.atProvider(op.issuer, captured, "alice", callback)
	resp, body = victim.send(http.MethodGet, back, nil, "")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" || !strings.Contains(body, "another browser") {
		t.Fatalf("confused deputy: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if out := as.stdout.String(); !strings.Contains(out, "register this redirect URI there: "+callback) {
		t.Errorf("callback URL not printed: %q", out)
	}
}
