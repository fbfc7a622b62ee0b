//go:build e2e

package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/pkce"
)

// TestE2EUpstreamGitHubGrantPolicy: `mcpauth authserver --upstream github`
// with the GitHub endpoints pointed at a GitHub fake on 127.0.0.1 and a
// grant policy: an MCP client's authorization request goes through our
// consent page, the fake's login and our callback, and ends with a token
// for (https://github.com, numeric id) carrying requested ∩ allowed; a
// step-up to a required scope the user may not have ends with
// access_denied on the client's redirect, with iss and state.
func TestE2EUpstreamGitHubGrantPolicy(t *testing.T) {
	t.Parallel()
	gh := oauthtest.NewGitHub(t)
	as := startProcEnv(t, []string{"E2E_GH_SECRET=" + gh.ClientSecret}, "authserver", "--addr", "127.0.0.1:0",
		"--insecure-http", "--scopes", "mcp:read mcp:write mcp:admin",
		"--upstream", "github", "--upstream-client-id", gh.ClientID, "--upstream-client-secret", "env:E2E_GH_SECRET",
		"--upstream-authorization-url", gh.AuthorizationURL(), "--upstream-token-url", gh.TokenURL(),
		"--upstream-userinfo-url", gh.UserURL(), "--upstream-emails-url", gh.EmailsURL(),
		"--allow-email-domain", "example.com", "--grant-policy", "../../authserver/testdata/grant-policy.json",
		"--client", "id=mcp-client,redirect=http://127.0.0.1:1/callback")
	m := regexp.MustCompile(`\(issuer (\S+)\)`).FindStringSubmatch(as.ready)
	if m == nil {
		t.Fatalf("ready line %q", as.ready)
	}
	issuer := strings.TrimSuffix(m[1], "/")
	callback := issuer + "/upstream/callback"
	gh.Register(callback)
	const clientCB = "http://127.0.0.1:1/callback"

	login := func(user oauthtest.GitHubUser, scope, state string) (url.Values, string) {
		t.Helper()
		gh.SetUser(user)
		verifier := pkce.GenerateVerifier()
		q := url.Values{"response_type": {"code"}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB},
			"state": {state}, "scope": {scope}, "code_challenge": {pkce.Challenge(verifier)},
			"code_challenge_method": {"S256"}}
		ua := newUserAgent(t)
		back := ua.atProvider(gh.AuthorizationURL(), ua.consent(issuer, q), "", callback)
		resp, body := ua.send(http.MethodGet, back, nil, "")
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), clientCB) || loc.Query().Get("state") != state ||
			loc.Query().Get("iss") != issuer {
			t.Fatalf("callback: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
		}
		return loc.Query(), verifier
	}
	token := func(code, verifier string) (string, string) {
		t.Helper()
		resp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"authorization_code"},
			"code": {code}, "code_verifier": {verifier}, "client_id": {"mcp-client"}, "redirect_uri": {clientCB}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
			Scope       string `json:"scope"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&tok)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("token: %d", resp.StatusCode)
		}
		return tok.AccessToken, tok.Scope
	}

	// octocat (id 583231) may have mcp:write by id, mcp:read by default.
	octocat := oauthtest.GitHubUser{ID: 583231, Login: "octocat",
		Emails: []oauthtest.GitHubEmail{{Email: "octocat@example.com", Primary: true, Verified: true}}}
	back, verifier := login(octocat, "mcp:read mcp:write", "s1")
	at, scope := token(back.Get("code"), verifier)
	if scope != "mcp:read mcp:write" {
		t.Fatalf("octocat's scope %q", scope)
	}
	if want := upstream.Subject("https://github.com", "583231"); !strings.Contains(decodeJWTPayload(t, at), `"sub":"`+want+`"`) {
		t.Fatalf("access token %s, want sub %s", decodeJWTPayload(t, at), want)
	}
	// bob is admitted by his verified email but allowed mcp:read only.
	bob := oauthtest.GitHubUser{ID: 99, Login: "bob",
		Emails: []oauthtest.GitHubEmail{{Email: "bob@example.com", Primary: true, Verified: true}}}
	back, verifier = login(bob, "mcp:read mcp:write", "s2")
	if _, scope := token(back.Get("code"), verifier); scope != "mcp:read" {
		t.Fatalf("bob's scope %q, want the narrowed mcp:read", scope)
	}
	// A step-up to the required mcp:admin, which octocat may not have.
	back, _ = login(octocat, "mcp:read mcp:admin", "s3")
	if back.Get("error") != "access_denied" || back.Get("code") != "" {
		t.Fatalf("step-up: %v, want access_denied", back)
	}
	// A user without a verified email at example.com is not admitted.
	eve := oauthtest.GitHubUser{ID: 7, Login: "eve", Email: "eve@example.com"}
	if back, _ = login(eve, "mcp:read", "s4"); back.Get("error") != "access_denied" {
		t.Fatalf("eve: %v, want access_denied", back)
	}
	for _, p := range gh.BearerPaths() {
		if p != "/api/user" && p != "/api/user/emails" {
			t.Errorf("a bearer token went to %s", p)
		}
	}
}

// decodeJWTPayload returns the payload of a compact JWS, unverified.
func decodeJWTPayload(t *testing.T, jwt string) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(payload)
}
