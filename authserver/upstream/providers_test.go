package upstream

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// severalHarness starts a server whose users log in at one of two
// providers: "corp", an OpenID provider (fakeProvider) with the google
// preset's extra authorization parameters, the home realm of example.com;
// and "gh", the GitHub fake through the github preset, admitting the
// GitHub user 583231. A vault keeps the tokens of both, and rsID may
// exchange for them.
func severalHarness(t *testing.T, corpAllow authserver.AllowList) (*harness, *fakeProvider, *oauthtest.GitHub) {
	t.Helper()
	var corp *fakeProvider
	g := oauthtest.NewGitHub(t)
	g.SetUser(oauthtest.GitHubUser{ID: 583231, Login: "octocat",
		Emails: []oauthtest.GitHubEmail{{Email: "octocat@users.example", Primary: true, Verified: true}}})
	h := newHarness(t, "", func(c *testConfig) {
		corp = newFakeProvider(t, c.Now)
		google, err := Preset(PresetGoogle, "")
		if err != nil {
			t.Fatal(err)
		}
		cp, err := New(Config{Issuer: corp.issuer, ClientID: upstreamClientID, ClientSecret: upstreamClientSecret,
			AuthParams: google.AuthParams, InsecureAllowHTTPLoopback: true, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		gc, err := Preset(PresetGitHub, "")
		if err != nil {
			t.Fatal(err)
		}
		gc.OAuth2.AuthorizationEndpoint, gc.OAuth2.TokenEndpoint = g.AuthorizationURL(), g.TokenURL()
		gc.OAuth2.UserInfoEndpoint, gc.OAuth2.EmailsEndpoint = g.UserURL(), g.EmailsURL()
		gc.ClientID, gc.ClientSecret, gc.InsecureAllowHTTPLoopback, gc.Now = g.ClientID, g.ClientSecret, true, c.Now
		gp, err := New(*gc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cp.Close(); _ = gp.Close() })
		c.Consent = authserver.ConsentPrompt
		c.Logins = []authserver.LoginProvider{
			{Name: "corp", Label: "Example Corp", Login: cp, Allow: corpAllow},
			{Name: "gh", Label: "GitHub", Login: gp, Allow: authserver.AllowList{Users: []string{"583231"}}},
		}
		c.HomeRealms = map[string]string{"example.com": "corp"}
		withVault(c)
		c.TokenVault = nil
		c.Vault = VaultConfig{Keys: [][]byte{testVaultKey}, Providers: []Provider{cp, gp}, Now: c.Now}.Open
		c.VaultAudience, c.VaultResourceServers = vaultAud, map[string]string{rsID: rsResource}
	})
	corp.set(func(p *fakeProvider) { p.vaultTokens = newFakeUpstreamTokens(time.Hour) })
	g.Register(h.as.UpstreamCallbackURLFor("gh"))
	return h, corp, g
}

// postChoice posts our choice page's form as a browser on our page.
func (b *browser) postChoice(form url.Values) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.h.url("/upstream/choose"), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// approveAll approves our consent page for q and returns the answer.
func (b *browser) approveAll(q url.Values) *http.Response {
	b.t.Helper()
	_, _, form := b.page(q)
	form.Set("action", "approve")
	req, _ := http.NewRequest(http.MethodPost, b.h.url(pathConsent), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// codeFrom follows the provider from up back to our callback and returns
// our redirect to the MCP client.
func (b *browser) codeFrom(up *url.URL) *url.URL {
	b.t.Helper()
	back := location(b.t, b.do(up.String()))
	return location(b.t, b.do(back.String()))
}

// TestSeveralProviders: with an OpenID provider and GitHub, a login_hint
// at the home realm goes straight to the OpenID provider, with the google
// preset's access_type=offline and prompt=consent on its authorization
// request, and the choice page's GitHub button to GitHub; each user is
// the subject of their provider's issuer, and the token exchange hands
// out the token of the provider the grant logged in at, refusing the
// other's.
func TestSeveralProviders(t *testing.T) {
	h, corp, _ := severalHarness(t, authserver.AllowList{EmailDomains: []string{"example.com"}})
	exchange := func(at, audience string) tokenResult {
		return upstreamExchange(h, at, func(f url.Values) { f.Set("audience", audience) })
	}

	// By the home realm of the login_hint, without the choice page.
	b := newBrowser(t, h)
	q, verifier := authParams(publicID, publicCB)
	q.Set("resource", rsResource)
	q.Set("login_hint", "alice@Example.com")
	up := location(t, b.approveAll(q))
	if !strings.HasPrefix(up.String(), corp.issuer+"/authorize?") {
		t.Fatalf("login_hint at the home realm: sent to %s", up)
	}
	back := b.codeFrom(up)
	var seen url.Values
	corp.set(func(p *fakeProvider) { seen = p.lastAuth })
	if seen.Get("access_type") != "offline" || seen.Get("prompt") != "consent" || seen.Get("login_hint") != "alice@example.com" ||
		seen.Get("redirect_uri") != h.as.UpstreamCallbackURLFor("corp") {
		t.Errorf("the provider saw %v", seen)
	}
	res := h.exchange(back.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["sub"] != identity.Subject(corp.issuer, "alice-123") {
		t.Errorf("corp user's sub %v", claims["sub"])
	}
	if got := exchange(res.tok.AccessToken, corp.issuer); got.tok == nil || got.tok.AccessToken == "" {
		t.Errorf("exchange for corp's token: %d %s", got.status, got.body)
	}
	wantError(t, exchange(res.tok.AccessToken, "https://github.com"), http.StatusBadRequest, oauthmeta.CodeInvalidTarget)

	// By the choice page's button.
	b = newBrowser(t, h)
	q, verifier = authParams(publicID, publicCB)
	q.Set("resource", rsResource)
	resp := b.approveAll(q)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="provider-gh"`) {
		t.Fatalf("choice page: %d %s", resp.StatusCode, body)
	}
	form := url.Values{"provider": {"gh"}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], m[2])
	}
	up = location(t, b.postChoice(form))
	back = b.codeFrom(up)
	res = h.exchange(back.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["sub"] != identity.Subject("https://github.com", "583231") {
		t.Errorf("GitHub user's sub %v", claims["sub"])
	}
	gh := exchange(res.tok.AccessToken, vaultAud) // the grant's provider
	if gh.tok == nil || !strings.HasPrefix(gh.tok.AccessToken, "gho_") {
		t.Errorf("exchange for the GitHub token: %d %s", gh.status, gh.body)
	}
	wantError(t, exchange(res.tok.AccessToken, corp.issuer), http.StatusBadRequest, oauthmeta.CodeInvalidTarget)
}

// TestSeveralProvidersGroupOverage: an ID token of one of several
// providers that sends the groups elsewhere (Entra ID's "_claim_names"
// and "_claim_sources") is refused when that provider's allow-list names
// a group, with the reason, as with a single provider.
func TestSeveralProvidersGroupOverage(t *testing.T) {
	h, corp, _ := severalHarness(t, authserver.AllowList{Groups: []string{"staff"}})
	corp.set(func(p *fakeProvider) {
		p.claims = func(req url.Values) map[string]any {
			c := p.defaultClaims(req)
			delete(c, "groups")
			c["_claim_names"] = map[string]any{"groups": "src1"}
			c["_claim_sources"] = map[string]any{"src1": map[string]any{
				"endpoint": "https://graph.microsoft.com/v1.0/users/alice-123/getMemberObjects"}}
			return c
		}
	})
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	q.Set("login_hint", "alice@example.com")
	back := b.codeFrom(location(t, b.approveAll(q)))
	if back.Query().Get("error") != "access_denied" || !strings.Contains(back.Query().Get("error_description"), "group overage") {
		t.Fatalf("overage: %s, want access_denied for group overage", back)
	}
	if !strings.Contains(h.logs.String(), "did not list the user's groups") {
		t.Error("the refusal was not logged")
	}
}

// TestLoginHintParam: the address that chose the provider is its
// login_hint, once; an operator's login_hint in AuthParams wins, and
// without an address none is sent.
func TestLoginHintParam(t *testing.T) {
	fp := newFakeProvider(t, newClock().Now)
	for _, tc := range []struct {
		params     map[string]string
		hint, want string
	}{
		{nil, "alice@example.com", "alice@example.com"},
		{map[string]string{"login_hint": "ops@example.com"}, "alice@example.com", "ops@example.com"},
		{nil, "", ""},
	} {
		p, err := New(Config{Issuer: fp.issuer, ClientID: upstreamClientID, AuthParams: tc.params, InsecureAllowHTTPLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		target, err := p.Start(t.Context(), &authserver.LoginRequest{State: "s", Nonce: "n",
			Verifier: strings.Repeat("v", 43), RedirectURI: "http://127.0.0.1/cb", LoginHint: tc.hint})
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(target)
		if got := u.Query()["login_hint"]; len(got) > 1 || strings.Join(got, "") != tc.want {
			t.Errorf("hint %q, AuthParams %v: login_hint %q, want %q", tc.hint, tc.params, got, tc.want)
		}
	}
}
