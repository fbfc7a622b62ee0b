package authserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// issuerLogin is a fakeLogin at an issuer of the test's choosing: Start
// sends the browser to the issuer's /authorize naming the state and the
// redirect URI, and Callback returns the user the test chose.
type issuerLogin struct {
	issuer string
	mu     sync.Mutex
	id     *UpstreamIdentity
}

func newIssuerLogin(issuer, sub, email string) *issuerLogin {
	return &issuerLogin{issuer: issuer, id: &UpstreamIdentity{Issuer: issuer, Subject: sub, Email: email, EmailVerified: true}}
}

func (f *issuerLogin) set(id *UpstreamIdentity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id = id
}

func (f *issuerLogin) Issuer() string { return f.issuer }

func (f *issuerLogin) AuthorizationEndpoint(context.Context) (string, error) {
	return f.issuer + "/authorize", nil
}

func (f *issuerLogin) Start(_ context.Context, l *LoginRequest) (string, error) {
	q := url.Values{"state": {l.State}, "redirect_uri": {l.RedirectURI}}
	if l.LoginHint != "" {
		q.Set("login_hint", l.LoginHint)
	}
	return f.issuer + "/authorize?" + q.Encode(), nil
}

func (f *issuerLogin) Callback(_ context.Context, q url.Values, l *LoginRequest) (*UpstreamIdentity, *oauth2.Token, error) {
	if iss, sent := q["iss"]; sent && iss[0] != f.issuer {
		return nil, nil, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied, Description: "wrong iss"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := *f.id
	return &id, &oauth2.Token{AccessToken: "at-of-" + f.issuer}, nil
}

const (
	corpLoginIssuer = "https://corp.example"
	githubIssuer    = "https://gh.example"
)

// providersHarness starts a server with two providers: "corp", the home
// realm of corp.example, admitting corp.example, and "gh", admitting the
// user "42".
func providersHarness(t *testing.T, mutate func(*Config)) (*harness, *issuerLogin, *issuerLogin) {
	corp := newIssuerLogin(corpLoginIssuer, "42", "alice@corp.example")
	gh := newIssuerLogin(githubIssuer, "42", "bob@users.example")
	h := newHarness(t, "", func(c *Config) {
		c.Consent = ConsentPrompt
		c.Logins = []LoginProvider{
			{Name: "corp", Label: "Corp SSO", Login: corp, Allow: AllowList{EmailDomains: []string{"corp.example"}}},
			{Name: "gh", Label: "GitHub", Login: gh, Allow: AllowList{Users: []string{"42"}}},
		}
		c.HomeRealms = map[string]string{"Corp.Example": "corp"}
		if mutate != nil {
			mutate(c)
		}
	})
	return h, corp, gh
}

// choose posts the choice page's form like a browser on our page.
func (b *browser) choose(form url.Values) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.h.url(pathChoose), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(b.h.issuer)
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// approve approves the consent page of q and returns the answer: the
// choice page, or the redirect to a provider.
func (b *browser) approve(q url.Values) *http.Response {
	b.t.Helper()
	resp, _, form := b.page(q)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("authorize: status %d, want the consent page", resp.StatusCode)
	}
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

// choiceForm reads the hidden fields of a choice page.
func choiceForm(t *testing.T, resp *http.Response) (string, url.Values) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want the choice page", resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], m[2])
	}
	return string(body), form
}

// callback returns from the provider at the callback of name with the
// state of the provider redirect up and extra parameters.
func (b *browser) callback(name string, up *url.URL, extra url.Values) *http.Response {
	b.t.Helper()
	q := url.Values{"state": {up.Query().Get("state")}, "code": {"c"}}
	for k, v := range extra {
		q[k] = v
	}
	resp, err := b.client.Get(b.h.url(pathUpstreamCallback + "/" + name + "?" + q.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// wantRedirectError checks a redirect to the MCP client with code.
func wantRedirectError(t *testing.T, resp *http.Response, code oauthmeta.ErrorCode) {
	t.Helper()
	loc := location(t, resp)
	if got := loc.Query().Get("error"); got != string(code) || !strings.HasPrefix(loc.String(), publicCB) {
		t.Fatalf("redirect %s, want error %s to the client", loc, code)
	}
}

// codeSubject exchanges the code of a redirect to the MCP client and returns
// the access token's subject.
func codeSubject(t *testing.T, h *harness, resp *http.Response, verifier string) string {
	t.Helper()
	loc := location(t, resp)
	if e := loc.Query().Get("error"); e != "" || !strings.HasPrefix(loc.String(), publicCB) {
		t.Fatalf("redirect %s, want a code", loc)
	}
	res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	_, claims := h.verifyJWT(res.tok.AccessToken)
	sub, _ := claims["sub"].(string)
	return sub
}

// TestLoginsChoicePage: with several providers the approval leads to a
// page of ours naming each, with a strict CSP and no script; the button
// of one sends the browser there with that provider's own redirect URI,
// and its callback issues a code for the user in its namespace.
func TestLoginsChoicePage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, button, issuer string
	}{
		{"corp", "corp", corpLoginIssuer},
		{"gh", "gh", githubIssuer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := providersHarness(t, nil)
			b := newBrowser(t, h)
			q, v := authParams(publicID, publicCB)
			if _, page, _ := b.page(q); !strings.Contains(page, "you choose where to sign in") {
				t.Error("the consent page does not say the user chooses next")
			}
			resp := b.approve(q)
			csp := resp.Header.Get("Content-Security-Policy")
			body, form := choiceForm(t, resp)
			for _, want := range []string{`id="provider-corp"`, `>Corp SSO<`, `id="provider-gh"`, `>GitHub<`, `name="email"`} {
				if !strings.Contains(body, want) {
					t.Errorf("choice page lacks %s", want)
				}
			}
			if strings.Contains(body, "<script") || !strings.Contains(csp, "default-src 'none'") ||
				!strings.Contains(csp, "form-action 'self' "+corpLoginIssuer+" "+githubIssuer) {
				t.Errorf("choice page CSP %q", csp)
			}
			form.Set("provider", tc.button)
			resp = b.choose(form)
			up := location(t, resp)
			if !strings.HasPrefix(up.String(), tc.issuer+"/authorize?") ||
				up.Query().Get("redirect_uri") != h.issuer+pathUpstreamCallback+"/"+tc.name {
				t.Fatalf("choice: redirect to %s", up)
			}
			if got := h.as.UpstreamCallbackURLFor(tc.name); got != up.Query().Get("redirect_uri") {
				t.Errorf("UpstreamCallbackURLFor = %q", got)
			}
			if up.Query().Has("login_hint") {
				t.Errorf("a button sent a login_hint: %s", up)
			}
			resp = b.callback(tc.name, up, nil)
			if got, want := codeSubject(t, h, resp, v), identity.Subject(tc.issuer, "42"); got != want {
				t.Errorf("sub = %q, want %q", got, want)
			}
		})
	}
}

// TestLoginsHomeRealm: a login_hint or a typed address at a mapped domain
// skips the choice (any ASCII case), one at another domain or no address
// shows it again, and a user whose verified email is at a mapped domain
// is refused at any other provider.
func TestLoginsHomeRealm(t *testing.T) {
	t.Parallel()
	t.Run("login_hint", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b := newBrowser(t, h)
		q, v := authParams(publicID, publicCB)
		q.Set("login_hint", "Alice@CORP.example")
		resp := b.approve(q)
		up := location(t, resp)
		if !strings.HasPrefix(up.String(), corpLoginIssuer+"/authorize?") || up.Query().Get("login_hint") != "alice@corp.example" {
			t.Fatalf("login_hint at the home realm: redirect to %s", up)
		}
		if got := codeSubject(t, h, b.callback("corp", up, nil), v); got != identity.Subject(corpLoginIssuer, "42") {
			t.Errorf("sub = %q", got)
		}
	})
	for _, hint := range []string{"bob@users.example", "not an address", "alice@corp.example."} {
		t.Run("hint "+hint, func(t *testing.T) {
			h, _, _ := providersHarness(t, nil)
			q, _ := authParams(publicID, publicCB)
			q.Set("login_hint", hint)
			choiceForm(t, newBrowser(t, h).approve(q))
		})
	}
	for _, tc := range []struct {
		name, email string
		wantPage    bool // shown again, else the redirect to corp
	}{
		{"typed address", "alice@corp.example", false},
		{"typed address in capitals", "ALICE@Corp.Example", false},
		{"unmapped domain", "alice@elsewhere.example", true},
		{"subdomain is another domain", "alice@eu.corp.example", true},
		{"not an address", "alice", true},
		{"non-ASCII look-alike", "alice@corp.exampl\u0435", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := providersHarness(t, nil)
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			_, form := choiceForm(t, b.approve(q))
			form.Set("action", "email")
			form.Set("email", tc.email)
			resp := b.choose(form)
			if tc.wantPage {
				body, again := choiceForm(t, resp)
				if !strings.Contains(body, `id="choice-message"`) || again.Get("request") == form.Get("request") {
					t.Errorf("page shown again without a message or with the spent request")
				}
				return
			}
			if up := location(t, resp); !strings.HasPrefix(up.String(), corpLoginIssuer+"/authorize?") ||
				up.Query().Get("login_hint") != "alice@corp.example" {
				t.Errorf("redirect to %s, want corp with the address as login_hint", up)
			}
		})
	}
	t.Run("typed address at a mapped domain with another provider's button", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("email", "alice@corp.example")
		form.Set("provider", "gh")
		wantRedirectError(t, b.choose(form), oauthmeta.CodeAccessDenied)
	})
	t.Run("verified email of a mapped domain at another provider", func(t *testing.T) {
		h, _, gh := providersHarness(t, nil)
		gh.set(&UpstreamIdentity{Issuer: githubIssuer, Subject: "42", Email: "carol@corp.example", EmailVerified: true})
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("provider", "gh")
		up := location(t, b.choose(form))
		wantRedirectError(t, b.callback("gh", up, nil), oauthmeta.CodeAccessDenied)
	})
}

// TestLoginsRefusals: an unknown provider, a form from elsewhere or
// without its CSRF token, an answer at another provider's callback or
// naming another provider's issuer, and an identity in another provider's
// namespace are refused.
func TestLoginsRefusals(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, h *harness, name string) (*browser, *url.URL) {
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("provider", name)
		return b, location(t, b.choose(form))
	}
	t.Run("unknown provider", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		for _, name := range []string{"github", "", "CORP"} {
			_, form := choiceForm(t, b.approve(q))
			form.Set("provider", name)
			if resp := b.choose(form); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("provider %q: status %d, want 400", name, resp.StatusCode)
			}
		}
	})
	t.Run("wrong CSRF token", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("provider", "corp")
		csrf := form.Get("csrf_token")
		form.Set("csrf_token", map[bool]string{true: "y", false: "x"}[csrf[0] == 'x']+csrf[1:])
		if resp := b.choose(form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("another browser", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, newBrowser(t, h).approve(q))
		form.Set("provider", "corp")
		if resp := newBrowser(t, h).choose(form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("cross-site form", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("provider", "corp")
		req, _ := http.NewRequest(http.MethodPost, h.url(pathChoose), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("provider switch at the callback", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b, up := start(t, h, "corp")
		wantRedirectError(t, b.callback("gh", up, nil), oauthmeta.CodeAccessDenied)
		// The login is spent: its own callback does not take it now.
		if resp := b.callback("corp", up, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("after the switch: status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("iss of another provider", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b, up := start(t, h, "corp")
		wantRedirectError(t, b.callback("corp", up, url.Values{"iss": {githubIssuer}}), oauthmeta.CodeAccessDenied)
	})
	t.Run("single-provider callback path", func(t *testing.T) {
		h, _, _ := providersHarness(t, nil)
		b, up := start(t, h, "corp")
		resp, err := b.client.Get(h.url(pathUpstreamCallback + "?state=" + url.QueryEscape(up.Query().Get("state")) + "&code=c"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %d, want 404", resp.StatusCode)
		}
	})
	t.Run("identity in another provider's namespace", func(t *testing.T) {
		h, _, gh := providersHarness(t, nil)
		gh.set(&UpstreamIdentity{Issuer: corpLoginIssuer, Subject: "42", Email: "bob@users.example", EmailVerified: true})
		b, up := start(t, h, "gh")
		wantRedirectError(t, b.callback("gh", up, nil), oauthmeta.CodeAccessDenied)
	})
	t.Run("allow-list of the other provider", func(t *testing.T) {
		// corp admits corp.example; gh's user at that domain is not
		// corp's (and no home realm here decides).
		h, _, gh := providersHarness(t, func(c *Config) { c.HomeRealms = nil })
		gh.set(&UpstreamIdentity{Issuer: githubIssuer, Subject: "7", Email: "alice@corp.example", EmailVerified: true})
		b, up := start(t, h, "gh")
		wantRedirectError(t, b.callback("gh", up, nil), oauthmeta.CodeAccessDenied)
	})
}

// TestLoginsIdentityNamespace: the same "sub" at two providers is two
// users, each the subject of its provider's issuer; a remembered consent
// of one is not the other's.
func TestLoginsIdentityNamespace(t *testing.T) {
	t.Parallel()
	h, _, _ := providersHarness(t, nil)
	subs := map[string]string{}
	for _, name := range []string{"corp", "gh"} {
		b := newBrowser(t, h)
		q, v := authParams(publicID, publicCB)
		_, form := choiceForm(t, b.approve(q))
		form.Set("provider", name)
		up := location(t, b.choose(form))
		subs[name] = codeSubject(t, h, b.callback(name, up, nil), v)
	}
	if subs["corp"] == subs["gh"] || subs["corp"] != identity.Subject(corpLoginIssuer, "42") || subs["gh"] != identity.Subject(githubIssuer, "42") {
		t.Errorf("subjects %v", subs)
	}
}

// TestLoginsConfigErrors: the configuration of several providers and of
// home realms is checked when the server starts.
func TestLoginsConfigErrors(t *testing.T) {
	t.Parallel()
	corp := newIssuerLogin(corpLoginIssuer, "42", "")
	gh := newIssuerLogin(githubIssuer, "42", "")
	any := AllowList{AllowAnyUser: true}
	ok := func() []LoginProvider {
		return []LoginProvider{{Name: "corp", Login: corp, Allow: any}, {Name: "gh", Login: gh, Allow: any}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
	}{
		{"Login and Logins", func(c *Config) { c.Login = newFakeLogin() }},
		{"global allow-list", func(c *Config) { c.Allow = any }},
		{"global grant policy", func(c *Config) { c.GrantPolicy = &GrantPolicy{Default: []string{"mcp:read"}} }},
		{"home realms without Logins", func(c *Config) { c.Logins = nil; c.HomeRealms = map[string]string{"corp.example": "corp"} }},
		{"auto consent", func(c *Config) { c.Consent = ConsentAuto }},
		{"name with capitals", func(c *Config) { c.Logins[0].Name = "Corp" }},
		{"empty name", func(c *Config) { c.Logins[0].Name = "" }},
		{"name with a slash", func(c *Config) { c.Logins[0].Name = "corp/x" }},
		{"name too long", func(c *Config) { c.Logins[0].Name = strings.Repeat("a", 33) }},
		{"same name twice", func(c *Config) { c.Logins[1].Name = "corp" }},
		{"same issuer twice", func(c *Config) { c.Logins[1].Login = newIssuerLogin(corpLoginIssuer, "1", "") }},
		{"no Login", func(c *Config) { c.Logins[1].Login = nil }},
		{"no allow-list", func(c *Config) { c.Logins[1].Allow = AllowList{} }},
		{"bad allow-list entry", func(c *Config) { c.Logins[1].Allow = AllowList{EmailDomains: []string{"corp.example."}} }},
		{"label with a control character", func(c *Config) { c.Logins[0].Label = "Corp\nSSO" }},
		{"label too long", func(c *Config) { c.Logins[0].Label = strings.Repeat("x", 65) }},
		{"too many providers", func(c *Config) {
			c.Logins = nil
			for i := range maxLogins + 1 {
				c.Logins = append(c.Logins, LoginProvider{Name: fmt.Sprintf("p%d", i),
					Login: newIssuerLogin(fmt.Sprintf("https://p%d.example", i), "1", ""), Allow: any})
			}
		}},
		{"realm of no provider", func(c *Config) { c.HomeRealms = map[string]string{"corp.example": "okta"} }},
		{"realm with a trailing dot", func(c *Config) { c.HomeRealms = map[string]string{"corp.example.": "corp"} }},
		{"realm of one label", func(c *Config) { c.HomeRealms = map[string]string{"corp": "corp"} }},
		{"realm with a wildcard", func(c *Config) { c.HomeRealms = map[string]string{"*.corp.example": "corp"} }},
		{"realm with an @", func(c *Config) { c.HomeRealms = map[string]string{"@corp.example": "corp"} }},
		{"realm not ASCII", func(c *Config) { c.HomeRealms = map[string]string{"corp.exampl\u0435": "corp"} }},
		{"realm an address literal", func(c *Config) { c.HomeRealms = map[string]string{"192.0.2.1": "corp"} }},
		{"realm twice in two cases", func(c *Config) {
			c.HomeRealms = map[string]string{"corp.example": "corp", "CORP.example": "gh"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Issuer: "https://as.example", Consent: ConsentPrompt, Scopes: []string{"mcp:read"}, Logins: ok()}
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
	cfg := Config{Issuer: "https://as.example", Consent: ConsentPrompt, Scopes: []string{"mcp:read"}, Logins: ok(),
		HomeRealms: map[string]string{"Corp.Example": "corp", "xn--bcher-kva.example": "gh"}}
	if _, err := New(cfg); err != nil {
		t.Fatalf("valid configuration: %v", err)
	}
}

// TestLoginNextSeveral: with several providers the way to the login goes
// through the choice page unless a provider is chosen (by login_hint),
// and the choice leads to the login, keeping the record of an approval.
func TestLoginNextSeveral(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const remembering = "browser-hash"
	s := mustNew(t, Config{Issuer: "https://as.example", Consent: ConsentPrompt, RememberConsent: true,
		Scopes: []string{"mcp:read"}, Clients: testClients(),
		Logins: []LoginProvider{
			{Name: "corp", Login: newIssuerLogin(corpLoginIssuer, "1", ""), Allow: AllowList{AllowAnyUser: true}},
			{Name: "gh", Login: newIssuerLogin(githubIssuer, "1", ""), Allow: AllowList{AllowAnyUser: true}},
		}})
	for _, tc := range []struct {
		name      string
		ev        loginEvent
		browser   string
		provider  string
		consented bool
		want      step
	}{
		{"approved, none chosen", approved, remembering, "", false, step{do: chooseUpstream, consented: true}},
		{"approved, chosen by login_hint", approved, remembering, "corp", false, step{do: logInUpstream, consented: true}},
		{"authorized in a remembering browser, none chosen", authorized, remembering, "", false, step{do: chooseUpstream}},
		{"authorized in a remembering browser, chosen", authorized, remembering, "gh", false, step{do: logInUpstream}},
		{"authorized elsewhere: the consent page first", authorized, "", "", false, step{do: askConsent}},
		{"chose after approving", chose, remembering, "gh", true, step{do: logInUpstream, consented: true}},
		{"chose before any approval", chose, remembering, "gh", false, step{do: logInUpstream}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &authRequest{client: &Client{ID: publicID}, redirectURI: publicCB, scopes: []string{"mcp:read"},
				browser: tc.browser, provider: tc.provider}
			if got := s.next(ctx, req, tc.ev, tc.consented); got != tc.want {
				t.Errorf("next = %+v, want %+v", got, tc.want)
			}
		})
	}
}
