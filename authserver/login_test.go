package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// fakeLogin is a [Login] provider in memory: Start sends the browser to
// a provider URL naming the state, and Callback returns the user the test
// chose, or refuses when the query says error. Package upstream tests the
// real providers.
type fakeLogin struct {
	mu sync.Mutex
	id *UpstreamIdentity
}

const fakeLoginIssuer = "https://idp.example"

func newFakeLogin() *fakeLogin {
	return &fakeLogin{id: &UpstreamIdentity{Issuer: fakeLoginIssuer, Subject: "alice-123", Email: "alice@example.com",
		EmailVerified: true, Name: "Alice", Groups: []string{"staff"}}}
}

// setIdentity makes id the user of the next logins.
func (f *fakeLogin) setIdentity(id *UpstreamIdentity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id = id
}

func (f *fakeLogin) Issuer() string { return fakeLoginIssuer }

func (f *fakeLogin) AuthorizationEndpoint(context.Context) (string, error) {
	return fakeLoginIssuer + "/authorize", nil
}

func (f *fakeLogin) Start(_ context.Context, l *LoginRequest) (string, error) {
	return fakeLoginIssuer + "/authorize?" + url.Values{"state": {l.State}, "nonce": {l.Nonce}}.Encode(), nil
}

func (f *fakeLogin) Callback(_ context.Context, q url.Values, l *LoginRequest) (*UpstreamIdentity, *oauth2.Token, error) {
	if q.Get("error") != "" || l.Nonce == "" || l.Verifier == "" {
		return nil, nil, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied, Description: "the identity provider refused the login"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := *f.id
	return &id, &oauth2.Token{AccessToken: "upstream-at"}, nil
}

// upstreamHarness starts an authorization server logging users in at a
// fakeLogin, with the consent page and an allow-list of example.com.
func upstreamHarness(t *testing.T, mutate func(*Config)) (*harness, *fakeLogin) {
	p := newFakeLogin()
	h := newHarness(t, "", func(c *Config) {
		c.Consent = ConsentPrompt
		c.Login, c.Allow = p, AllowList{EmailDomains: []string{"example.com"}}
		if mutate != nil {
			mutate(c)
		}
	})
	return h, p
}

// login runs the whole login in b: our consent page, approved; the
// provider, which sends the browser back at once; our callback. It returns
// our final response (the redirect to the MCP client, or a page).
func (b *browser) login(q url.Values) *http.Response {
	b.t.Helper()
	resp, _, form := b.page(q)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("authorize: status %d, want the consent page", resp.StatusCode)
	}
	form.Set("action", "approve")
	resp = b.submit(form, nil)
	up := location(b.t, resp)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(up.String(), fakeLoginIssuer+"/authorize?") {
		b.t.Fatalf("consent: status %d to %s, want the provider", resp.StatusCode, up)
	}
	back := url.Values{"state": {up.Query().Get("state")}, "code": {"c"}}
	resp, err := b.client.Get(b.h.url(pathUpstreamCallback + "?" + back.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestLoginNext: what follows each event of the browser login, for each
// consent mode, with and without a login at a provider, a browser that may
// use a remembered consent, and a remembered consent.
func TestLoginNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const remembering = "browser-hash"
	tests := []struct {
		name      string
		consent   ConsentMode
		login     bool
		ev        loginEvent
		browser   string // req.browser
		subject   string // req.subject
		consented bool
		stored    bool // a remembered consent for the request exists
		want      step
	}{
		{"deny mode", ConsentDeny, false, authorized, remembering, "", false, true, step{do: refuse}},
		{"auto mode", ConsentAuto, false, authorized, "", "", false, false, step{do: issue}},
		{"page: a browser without a remembered consent", ConsentPrompt, false, authorized, "", "", false, true, step{do: askConsent}},
		{"page: remembered", ConsentPrompt, false, authorized, remembering, "", false, true, step{do: issue}},
		{"page: nothing remembered", ConsentPrompt, false, authorized, remembering, "", false, false, step{do: askConsent}},
		{"login: page first in a browser that may not skip it", ConsentPrompt, true, authorized, "", "", false, true, step{do: askConsent}},
		{"login: the user is known only after it", ConsentPrompt, true, authorized, remembering, "", false, true, step{do: logInUpstream}},
		{"denied", ConsentPrompt, true, denied, remembering, "", false, true, step{do: refuse}},
		{"approved", ConsentPrompt, false, approved, remembering, "", false, false, step{do: issue, remember: true}},
		{"approved before the login", ConsentPrompt, true, approved, remembering, "", false, false, step{do: logInUpstream, consented: true}},
		{"approved after the login", ConsentPrompt, true, approved, remembering, "u-1", false, false, step{do: issue, remember: true}},
		{"logged in after approving", ConsentPrompt, true, loggedIn, remembering, "u-1", true, false, step{do: issue, remember: true}},
		{"logged in, remembered", ConsentPrompt, true, loggedIn, remembering, "u-1", false, true, step{do: issue}},
		{"logged in, nothing remembered", ConsentPrompt, true, loggedIn, remembering, "u-1", false, false, step{do: askConsent}},
		{"logged in, another browser", ConsentPrompt, true, loggedIn, "", "u-1", false, true, step{do: askConsent}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Issuer: "https://as.example", Consent: tc.consent, RememberConsent: true, Scopes: []string{"mcp:read"},
				Clients: testClients()}
			if tc.login {
				cfg.Login, cfg.Allow = newFakeLogin(), AllowList{AllowAnyUser: true}
			}
			s := mustNew(t, cfg)
			req := &authRequest{client: &Client{ID: publicID}, redirectURI: publicCB, scopes: []string{"mcp:read"},
				browser: tc.browser, subject: tc.subject}
			if tc.stored {
				c := &Consent{Subject: s.userOf(req), ClientID: publicID, RedirectURI: publicCB, Scopes: []string{"mcp:read"},
					Browsers: []string{remembering}, GrantedAt: s.clock.Now(), ExpiresAt: s.clock.Now().Add(consentTTL)}
				if err := s.store.Consents.SaveConsent(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.next(ctx, req, tc.ev, tc.consented); got != tc.want {
				t.Errorf("next = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestLoginConfigErrors: a login needs an allow-list and the consent
// page; an allow-list, grant policy or vault needs a login.
func TestLoginConfigErrors(t *testing.T) {
	t.Parallel()
	vault := func(UpstreamTokenStore) (Vault, error) { return nil, errors.New("not opened") }
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
	}{
		{"no allow-list", func(c *Config) { c.Allow = AllowList{} }},
		{"auto consent", func(c *Config) { c.Consent = ConsentAuto }},
		{"allow-list without login", func(c *Config) { c.Login = nil }},
		{"grant policy without login", func(c *Config) {
			c.Login, c.Allow, c.GrantPolicy = nil, AllowList{}, &GrantPolicy{Default: []string{"mcp:read"}}
		}},
		{"vault without login", func(c *Config) { c.Login, c.Allow, c.Vault = nil, AllowList{}, vault }},
		{"vault exchange without vault", func(c *Config) { c.VaultAudience = "idp" }},
		{"unregistered exchange client", func(c *Config) {
			c.Vault, c.VaultResourceServers = vault, map[string]string{"nobody": "https://mcp.example.com/mcp"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Issuer: "https://as.example", Consent: ConsentPrompt, Scopes: []string{"mcp:read"},
				Login: newFakeLogin(), Allow: AllowList{AllowAnyUser: true}}
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
}

// TestUpstreamCookieNames: on https the upstream binding cookie is
// __Host-mcpauth-upstream, Secure, HttpOnly, SameSite=Lax on path /
// without domain, and an unprefixed cookie of the same name is not read;
// on plain http it is mcpauth-upstream, still HttpOnly and Lax.
func TestUpstreamCookieNames(t *testing.T) {
	t.Parallel()
	kept := strings.Repeat("k", 43)
	for _, tc := range []struct {
		https          bool
		name, stranger string
	}{
		{true, "__Host-mcpauth-upstream", "mcpauth-upstream"},
		{false, "mcpauth-upstream", "__Host-mcpauth-upstream"},
	} {
		s := &Server{}
		s.cfg.https = tc.https
		for _, sent := range []string{"", tc.name, tc.stranger} {
			r := httptest.NewRequest(http.MethodGet, "/authorize", nil)
			if sent != "" {
				r.AddCookie(&http.Cookie{Name: sent, Value: kept})
			}
			w := httptest.NewRecorder()
			v := s.upstreamBrowserID(w, r)
			if (v == kept) != (sent == tc.name) || len(v) != 43 {
				t.Errorf("https %v, cookie %q sent: value %q", tc.https, sent, v)
			}
			c := w.Result().Cookies()
			if len(c) != 1 || c[0].Name != tc.name || c[0].Value != v || c[0].Secure != tc.https || !c[0].HttpOnly ||
				c[0].SameSite != http.SameSiteLaxMode || c[0].Path != "/" || c[0].Domain != "" {
				t.Errorf("https %v, cookie %q sent: set %+v", tc.https, sent, c)
			}
		}
	}
}
