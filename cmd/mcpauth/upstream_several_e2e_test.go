//go:build e2e

package main

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/pkce"
)

// TestE2EUpstreamSeveralProviders: `mcpauth authserver` with two
// upstreams, panva oidc-provider ("corp", the home realm of example.com)
// and the GitHub fake ("gh"), each at its own callback. A login_hint at
// example.com goes straight to oidc-provider; without one, our choice
// page's GitHub button goes to GitHub, and an address at example.com typed
// on it to oidc-provider. Each token's subject is its provider's user, and
// an answer taken to the other provider's callback is refused.
func TestE2EUpstreamSeveralProviders(t *testing.T) {
	t.Parallel()
	gh := oauthtest.NewGitHub(t)
	gh.SetUser(oauthtest.GitHubUser{ID: 583231, Login: "octocat",
		Emails: []oauthtest.GitHubEmail{{Email: "octocat@users.example", Primary: true, Verified: true}}})
	ready := regexp.MustCompile(`\(issuer (\S+)\)`)
	var as *proc
	op := startOIDCProvider(t, func(opIssuer string) (string, string) {
		as = startProcEnv(t, []string{"E2E_IDP_SECRET=interop-secret", "E2E_GH_SECRET=" + gh.ClientSecret},
			"authserver", "--addr", "127.0.0.1:0", "--insecure-http",
			"--upstream", "corp="+opIssuer+",client-id=mcpauth,client-secret=env:E2E_IDP_SECRET,allow-email-domain=example.com,label=Example Corp",
			"--upstream", "gh=github,client-id="+gh.ClientID+",client-secret=env:E2E_GH_SECRET,allow-user=583231"+
				",authorization-url="+gh.AuthorizationURL()+",token-url="+gh.TokenURL()+
				",userinfo-url="+gh.UserURL()+",emails-url="+gh.EmailsURL(),
			"--upstream-realm", "example.com=corp",
			"--client", "id=mcp-client,redirect=http://127.0.0.1:1/callback")
		m := ready.FindStringSubmatch(as.ready)
		if m == nil {
			t.Fatalf("ready line %q", as.ready)
		}
		return strings.TrimSuffix(m[1], "/") + "/upstream/callback/corp", "interop-secret"
	})
	issuer := strings.TrimSuffix(ready.FindStringSubmatch(as.ready)[1], "/")
	corpCB, ghCB := issuer+"/upstream/callback/corp", issuer+"/upstream/callback/gh"
	gh.Register(ghCB)
	for _, cb := range []string{corpCB, ghCB} {
		if !strings.Contains(as.stdout.String(), "register this redirect URI there: "+cb) {
			t.Errorf("callback %s not printed: %q", cb, as.stdout.String())
		}
	}
	const clientCB = "http://127.0.0.1:1/callback"

	// start approves our consent page for a new request and returns our
	// answer: the choice page, or the redirect to a provider.
	start := func(ua *userAgent, hint string) (*http.Response, string, string) {
		t.Helper()
		verifier := pkce.GenerateVerifier()
		q := url.Values{"response_type": {"code"}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB},
			"state": {"st"}, "scope": {"mcp:read"}, "code_challenge": {pkce.Challenge(verifier)},
			"code_challenge_method": {"S256"}}
		if hint != "" {
			q.Set("login_hint", hint)
		}
		resp, body := ua.send(http.MethodGet, issuer+"/authorize?"+q.Encode(), nil, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("authorize: %d %s", resp.StatusCode, body)
		}
		form := url.Values{"action": {"approve"}}
		for _, m := range hiddenInput.FindAllStringSubmatch(body, -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		resp, body = ua.send(http.MethodPost, issuer+"/consent", form, issuer)
		return resp, body, verifier
	}
	choose := func(ua *userAgent, page string, choice url.Values) string {
		t.Helper()
		for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
			choice.Set(m[1], html.UnescapeString(m[2]))
		}
		resp, body := ua.send(http.MethodPost, issuer+"/upstream/choose", choice, issuer)
		if resp.Header.Get("Location") == "" {
			t.Fatalf("choice: %d %s", resp.StatusCode, body)
		}
		return resp.Header.Get("Location")
	}
	finish := func(ua *userAgent, back, verifier string) string {
		t.Helper()
		resp, body := ua.send(http.MethodGet, back, nil, "")
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || !strings.HasPrefix(loc.String(), clientCB) || loc.Query().Get("code") == "" {
			t.Fatalf("callback: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
		}
		tresp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"authorization_code"},
			"code": {loc.Query().Get("code")}, "code_verifier": {verifier}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB}})
		if err != nil {
			t.Fatal(err)
		}
		defer tresp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(tresp.Body).Decode(&tok); err != nil || tresp.StatusCode != http.StatusOK {
			t.Fatalf("token: %d %v", tresp.StatusCode, err)
		}
		return decodeJWTPayload(t, tok.AccessToken)
	}
	wantSub := func(payload, iss, sub string) {
		t.Helper()
		if want := upstream.Subject(iss, sub); !strings.Contains(payload, `"sub":"`+want+`"`) {
			t.Errorf("access token %s, want sub %s", payload, want)
		}
	}

	// By the home realm of the login_hint: no choice page.
	ua := newUserAgent(t)
	resp, body, verifier := start(ua, "alice@example.com")
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, op.issuer+"/") {
		t.Fatalf("login_hint at example.com: %d %s %s", resp.StatusCode, loc, body)
	}
	wantSub(finish(ua, ua.atProvider(op.issuer, loc, "alice", corpCB), verifier), op.issuer, "alice")

	// By the choice page's GitHub button.
	ua = newUserAgent(t)
	resp, body, verifier = start(ua, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="provider-gh"`) || !strings.Contains(body, "Example Corp") {
		t.Fatalf("choice page: %d %s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(body, "<script") {
		t.Errorf("choice page CSP %q", csp)
	}
	up := choose(ua, body, url.Values{"provider": {"gh"}})
	wantSub(finish(ua, ua.atProvider(gh.AuthorizationURL(), up, "", ghCB), verifier), "https://github.com", "583231")

	// By an address typed on the choice page.
	ua = newUserAgent(t)
	_, body, verifier = start(ua, "")
	up = choose(ua, body, url.Values{"action": {"email"}, "email": {"bob@Example.COM"}})
	if !strings.HasPrefix(up, op.issuer+"/") {
		t.Fatalf("typed address at example.com: sent to %s", up)
	}
	wantSub(finish(ua, ua.atProvider(op.issuer, up, "bob", corpCB), verifier), op.issuer, "bob")

	// GitHub's answer taken to oidc-provider's callback (a mix-up).
	ua = newUserAgent(t)
	_, body, _ = start(ua, "")
	up = choose(ua, body, url.Values{"provider": {"gh"}})
	back, _ := url.Parse(ua.atProvider(gh.AuthorizationURL(), up, "", ghCB))
	resp, body = ua.send(http.MethodGet, corpCB+"?"+back.RawQuery, nil, "")
	if l, _ := url.Parse(resp.Header.Get("Location")); l == nil || l.Query().Get("error") != "access_denied" {
		t.Fatalf("mix-up: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}
