package authserver

import (
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// fakeThird is a third-party provider to connect, in memory: Start names
// the state and the PKCE challenge in its URL, and Callback accepts only
// the code "ok:" followed by the challenge of the login's verifier (what
// the provider would redeem for this client), refuses a wrong or
// missing "iss" where the provider announces it (RFC 9207), and refuses
// any other code, as a provider does a code it issued to another client.
// Package upstream tests the real providers' checks.
type fakeThird struct {
	name, issuer string
	n            atomic.Int64
}

func (f *fakeThird) Issuer() string { return f.issuer }

func (f *fakeThird) AuthorizationEndpoint(context.Context) (string, error) {
	return f.issuer + "/authorize", nil
}

func (f *fakeThird) Start(_ context.Context, l *LoginRequest) (string, error) {
	return f.issuer + "/authorize?" + url.Values{"state": {l.State}, "code_challenge": {pkce.Challenge(l.Verifier)},
		"redirect_uri": {l.RedirectURI}}.Encode(), nil
}

func (f *fakeThird) Callback(_ context.Context, q url.Values, l *LoginRequest) (*UpstreamIdentity, *oauth2.Token, error) {
	refuse := &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied, Description: "the provider refused"}
	switch {
	case q.Get("error") != "", q.Get("iss") != f.issuer:
		return nil, nil, refuse
	case q.Get("code") != "ok:"+pkce.Challenge(l.Verifier), !strings.HasSuffix(l.RedirectURI, pathConnectCallback):
		return nil, nil, refuse
	}
	n := f.n.Add(1)
	return &UpstreamIdentity{Issuer: f.issuer, Subject: "ext-user"},
		&oauth2.Token{AccessToken: f.name + "-at-" + string(rune('0'+n)), RefreshToken: f.name + "-rt-secret", TokenType: "Bearer"}, nil
}

// fakeVault keeps tokens in the UpstreamTokenStore unsealed (package
// upstream has the real, sealed one with its refresh lease); refuse makes
// every refresh fail as a provider that ended the grant.
type fakeVault struct {
	store  UpstreamTokenStore
	refuse atomic.Bool
}

func (v *fakeVault) Keep(ctx context.Context, _ string, tok *oauth2.Token, expires time.Time) (string, error) {
	id := randomToken(8)
	return id, v.store.SaveUpstreamTokens(ctx, &UpstreamTokens{ID: id, Version: 1, ExpiresAt: expires, Sealed: []byte(tok.AccessToken)})
}

func (v *fakeVault) Bind(ctx context.Context, id string, g *Grant) error {
	rec, err := v.store.UpstreamTokens(ctx, id)
	if err != nil {
		return err
	}
	rec.GrantID, rec.ExpiresAt = g.ID, g.ExpiresAt
	rec.Version++
	return v.store.SaveUpstreamTokens(ctx, rec)
}

func (v *fakeVault) Token(ctx context.Context, g *Grant, _ string) (*oauth2.Token, error) {
	rec, err := v.store.UpstreamTokens(ctx, g.UpstreamTokens)
	if err != nil || rec.GrantID != g.ID {
		return nil, ErrNotFound
	}
	if v.refuse.Load() {
		v.Drop(ctx, rec.ID)
		return nil, ErrNotFound
	}
	return &oauth2.Token{AccessToken: string(rec.Sealed), TokenType: "Bearer"}, nil
}

func (v *fakeVault) Drop(ctx context.Context, id string) { _ = v.store.DeleteUpstreamTokens(ctx, id) }

// connectRig is an authorization server logging users in at a fakeLogin,
// with two providers to connect (github, google) and a resource server
// allowed the token exchange.
type connectRig struct {
	t      *testing.T
	h      *harness
	idp    *fakeLogin
	third  map[string]*fakeThird
	vaults map[string]*fakeVault
	mu     sync.Mutex // guards idp identity switches with the logins that use them
}

func newConnectRig(t *testing.T) *connectRig {
	t.Helper()
	c := &connectRig{t: t, third: map[string]*fakeThird{}, vaults: map[string]*fakeVault{}}
	c.h, c.idp = upstreamHarness(t, func(cfg *Config) {
		cfg.Clients = append(cfg.Clients, Client{ID: rsID, Secret: rsSecret,
			GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
		cfg.VaultResourceServers = map[string]string{rsID: testResource}
		for _, name := range []string{"github", "google"} {
			f := &fakeThird{name: name, issuer: "https://" + name + ".example"}
			v := &fakeVault{}
			c.third[name], c.vaults[name] = f, v
			cfg.Connect = append(cfg.Connect, ConnectProvider{Name: name, DisplayName: strings.ToUpper(name[:1]) + name[1:],
				Login: f, Vault: func(st UpstreamTokenStore) (Vault, error) { v.store = st; return v, nil }})
		}
	})
	return c
}

// user is a person with a browser of their own.
type user struct {
	email, sub string
	b          *browser
}

func (c *connectRig) newUser(name string) *user {
	return &user{email: name + "@example.com", sub: name + "-123", b: newBrowser(c.t, c.h)}
}

func (c *connectRig) as(u *user) {
	c.idp.setIdentity(&UpstreamIdentity{Issuer: fakeLoginIssuer, Subject: u.sub, Email: u.email, EmailVerified: true})
}

// accessToken signs u in through the public MCP client and returns the
// access and refresh tokens for the resource server.
func (c *connectRig) accessToken(u *user) (string, string) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.as(u)
	q, v := authParams(publicID, publicCB)
	q.Set("resource", testResource)
	resp := u.b.login(q)
	code := location(c.t, resp).Query().Get("code")
	res := c.h.exchange(code, v, publicCB, nil)
	if res.status != http.StatusOK {
		c.t.Fatalf("token: %d %s", res.status, res.body)
	}
	return res.tok.AccessToken, res.tok.RefreshToken
}

// exchange is the resource server's token exchange for provider.
func (c *connectRig) exchange(subjectToken, provider string) tokenResult {
	c.t.Helper()
	return c.h.token(url.Values{
		"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {subjectToken},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "audience": {provider},
	}, rsID, rsSecret)
}

// connectURI asks for provider's token and returns the connect URI of the
// refusal.
func (c *connectRig) connectURI(at, provider string) string {
	c.t.Helper()
	res := c.exchange(at, provider)
	if res.status != http.StatusBadRequest || res.err == nil || res.err.Code != oauthmeta.CodeInvalidGrant || res.err.ConnectURI == "" {
		c.t.Fatalf("exchange for %s: %d %s, want invalid_grant with a connect_uri", provider, res.status, res.body)
	}
	return res.err.ConnectURI
}

// wantToken asks for provider's token and wants want.
func (c *connectRig) wantToken(at, provider, want string) {
	c.t.Helper()
	res := c.exchange(at, provider)
	if res.status != http.StatusOK || res.tok.AccessToken != want || res.tok.IssuedTokenType != oauthmeta.TokenTypeAccessToken ||
		!strings.EqualFold(res.tok.TokenType, "Bearer") {
		c.t.Fatalf("exchange for %s: %d %s, want %s", provider, res.status, res.body, want)
	}
}

// get fetches rawURL in b.
func get(t *testing.T, b *browser, rawURL string) (*http.Response, string) {
	t.Helper()
	resp, err := b.client.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// openLink opens a connect (or disconnect) page in u's browser, signed in
// at the identity provider as signedIn, and returns the page after the
// login: the confirmation form, or a refusal.
func (c *connectRig) openLink(u *user, link string, signedIn *user) (*http.Response, string, url.Values) {
	c.t.Helper()
	resp, body := get(c.t, u.b, link)
	if resp.StatusCode != http.StatusFound {
		return resp, body, nil
	}
	idp := location(c.t, resp)
	if !strings.HasPrefix(idp.String(), fakeLoginIssuer+"/authorize?") {
		c.t.Fatalf("connect page sent the browser to %s, want the login", idp)
	}
	c.mu.Lock()
	c.as(signedIn)
	back := url.Values{"state": {idp.Query().Get("state")}, "code": {"c"}}
	resp, body = get(c.t, u.b, c.h.url(pathUpstreamCallback+"?"+back.Encode()))
	c.mu.Unlock()
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	return resp, body, form
}

// confirm posts the confirmation form to path in u's browser.
func (c *connectRig) confirm(u *user, path string, form url.Values, action string, headers map[string]string) (*http.Response, string) {
	c.t.Helper()
	form = cloneValues(form)
	form.Set("action", action)
	req, _ := http.NewRequest(http.MethodPost, c.h.url(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	o, _ := url.Parse(c.h.issuer)
	req.Header.Set("Origin", o.Scheme+"://"+o.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := u.b.client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// authorizeAt confirms the connect form and returns the provider's
// authorization request the browser is sent to.
func (c *connectRig) authorizeAt(u *user, provider string, form url.Values) *url.URL {
	c.t.Helper()
	resp, body := c.confirm(u, pathConnectPrefix+provider, form, "connect", nil)
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("confirm: %d %s", resp.StatusCode, body)
	}
	return location(c.t, resp)
}

// callback is the provider's redirect back, with a code for the
// authorization request az unless code is set.
func (c *connectRig) callback(u *user, provider string, az *url.URL, edit func(q url.Values)) (*http.Response, string) {
	c.t.Helper()
	q := url.Values{"state": {az.Query().Get("state")}, "code": {"ok:" + az.Query().Get("code_challenge")},
		"iss": {c.third[provider].issuer}}
	if edit != nil {
		edit(q)
	}
	return get(c.t, u.b, c.h.url(pathConnectCallback+"?"+q.Encode()))
}

// connect runs the whole connect flow of link for u in u's browser.
func (c *connectRig) connect(u *user, provider, link string) {
	c.t.Helper()
	resp, body, form := c.openLink(u, link, u)
	if resp.StatusCode != http.StatusOK || form.Get("csrf_token") == "" {
		c.t.Fatalf("connect page: %d %s", resp.StatusCode, body)
	}
	resp, body = c.callback(u, provider, c.authorizeAt(u, provider, form), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "is connected") {
		c.t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
}

// account returns u's stored account at provider, nil when none.
func (c *connectRig) account(u *user, provider string) *ConnectedAccount {
	c.t.Helper()
	a, err := c.h.as.store.Connect.ConnectedAccount(context.Background(), subjectOf(u), provider)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

func subjectOf(u *user) string { return identity.Subject(fakeLoginIssuer, u.sub) }

// TestConnectFlow: a resource server asks for a provider's token and gets
// a connect URI; the user connects in their browser; the exchange then
// answers with the provider's token, for two providers independently;
// disconnecting at the page or through the Go API brings the connect URI
// back; no token reaches a log, a URL or an error.
func TestConnectFlow(t *testing.T) {
	t.Parallel()
	c := newConnectRig(t)
	alice := c.newUser("alice")
	at, _ := c.accessToken(alice)

	link := c.connectURI(at, "github")
	if !strings.HasPrefix(link, c.h.issuer+"/connect/github?ref=") || strings.Contains(link, "alice") ||
		strings.Contains(link, subjectOf(alice)) {
		t.Fatalf("connect_uri %q", link)
	}
	resp, body, form := c.openLink(alice, link, alice)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("connect page: %d %s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self' https://github.example"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for _, want := range []string{"Connect Github", "github.example", "alice@example.com", "Public App", rsID, `value="connect"`} {
		if !strings.Contains(body, want) {
			t.Errorf("connect page lacks %q", want)
		}
	}
	az := c.authorizeAt(alice, "github", form)
	if !strings.HasPrefix(az.String(), "https://github.example/authorize?") || az.Query().Get("code_challenge") == "" ||
		az.Query().Get("redirect_uri") != c.h.as.ConnectCallbackURL() {
		t.Fatalf("provider request %s", az)
	}
	if resp, body := c.callback(alice, "github", az, nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Github connected") {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	c.wantToken(at, "github", "github-at-1")
	c.wantToken(at, "https://github.example", "github-at-1") // the issuer as audience too

	// A second provider is its own connection.
	c.connect(alice, "google", c.connectURI(at, "google"))
	c.wantToken(at, "google", "google-at-1")
	c.wantToken(at, "github", "github-at-1")

	// Disconnecting at the page, signed in as the same user.
	resp, body, form = c.openLink(alice, c.h.url("/connect/github/disconnect"), alice)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `value="disconnect"`) {
		t.Fatalf("disconnect page: %d %s", resp.StatusCode, body)
	}
	if resp, body := c.confirm(alice, "/connect/github/disconnect", form, "disconnect", nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "no longer connected") {
		t.Fatalf("disconnect: %d %s", resp.StatusCode, body)
	}
	c.connectURI(at, "github")
	c.wantToken(at, "google", "google-at-1")

	// And through the Go API.
	if err := c.h.as.Disconnect(context.Background(), subjectOf(alice), "google"); err != nil {
		t.Fatal(err)
	}
	c.connectURI(at, "google")
	if err := c.h.as.Disconnect(context.Background(), subjectOf(alice), "slack"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Disconnect of an unknown provider: %v", err)
	}

	logs := c.h.logs.String()
	for _, secret := range []string{"github-at-", "google-at-", "-rt-secret", "ok:", at} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
	if !strings.Contains(logs, "third-party account connected") {
		t.Error("no log of the connection")
	}
}

// TestConnectHostile: every way a connect link, a confirmation or a
// provider's answer can be misused links nothing.
func TestConnectHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// run attacks and reports the users who must have no github
		// account afterwards.
		run func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, bobAT string)
	}{
		{"link opened by another user", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			link := c.connectURI(aliceAT, "github")
			resp, body, form := c.openLink(bob, link, bob) // Alice sends Bob her link
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "made for another user") || form.Get("csrf_token") != "" {
				t.Fatalf("another user's link: %d %s", resp.StatusCode, body)
			}
			if !strings.Contains(c.h.logs.String(), "connect_user_mismatch") {
				t.Error("no audit event")
			}
			// The link is burnt: not even Alice can use it now.
			if resp, body, _ := c.openLink(alice, link, alice); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("burnt link: %d %s", resp.StatusCode, body)
			}
		}},
		{"link of a victim opened by an attacker", func(t *testing.T, c *connectRig, alice, bob *user, _, bobAT string) {
			// Alice obtains Bob's link and signs in as herself: refused too.
			link := c.connectURI(bobAT, "github")
			if resp, body, _ := c.openLink(alice, link, alice); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		}},
		{"ref replayed after use", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			link := c.connectURI(aliceAT, "github")
			c.connect(alice, "github", link)
			if err := c.h.as.Disconnect(context.Background(), subjectOf(alice), "github"); err != nil {
				t.Fatal(err)
			}
			if resp, body := get(t, alice.b, link); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "already used") {
				t.Fatalf("replayed ref: %d %s", resp.StatusCode, body)
			}
		}},
		{"ref expired", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			link := c.connectURI(aliceAT, "github")
			c.h.clock.Advance(ConnectRefTTL + time.Second)
			if resp, body := get(t, alice.b, link); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("expired ref: %d %s", resp.StatusCode, body)
			}
		}},
		{"ref expired during the flow", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			_, _, form := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
			az := c.authorizeAt(alice, "github", form)
			c.h.clock.Advance(ConnectRefTTL + time.Second)
			if resp, body := c.callback(alice, "github", az, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("late callback: %d %s", resp.StatusCode, body)
			}
		}},
		{"unknown or missing ref", func(t *testing.T, c *connectRig, alice, bob *user, _, _ string) {
			for _, q := range []string{"?ref=bogus", "", "?ref=a&ref=b"} {
				if resp, body := get(t, alice.b, c.h.url("/connect/github"+q)); resp.StatusCode != http.StatusForbidden {
					t.Fatalf("%q: %d %s", q, resp.StatusCode, body)
				}
			}
		}},
		{"ref for another provider", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			link := c.connectURI(aliceAT, "google")
			if resp, body := get(t, alice.b, strings.Replace(link, "/connect/google", "/connect/github", 1)); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
		}},
		{"state swapped between two users' flows", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, bobAT string) {
			_, _, af := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
			_, _, bf := c.openLink(bob, c.connectURI(bobAT, "github"), bob)
			aAZ, bAZ := c.authorizeAt(alice, "github", af), c.authorizeAt(bob, "github", bf)
			// Bob's provider answer (state and code) lands in Alice's browser,
			// and Alice's in Bob's: both refused.
			if resp, body := c.callback(alice, "github", bAZ, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("Bob's state in Alice's browser: %d %s", resp.StatusCode, body)
			}
			if resp, body := c.callback(bob, "github", aAZ, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("Alice's state in Bob's browser: %d %s", resp.StatusCode, body)
			}
			// Alice's state with Bob's code in her own browser: the code is
			// not for her flow's verifier.
			if resp, body := c.callback(alice, "github", aAZ, func(q url.Values) { q.Set("code", "ok:"+bAZ.Query().Get("code_challenge")) }); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("Bob's code in Alice's flow: %d %s", resp.StatusCode, body)
			}
		}},
		{"code for another client", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			_, _, form := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
			az := c.authorizeAt(alice, "github", form)
			if resp, body := c.callback(alice, "github", az, func(q url.Values) { q.Set("code", "issued-to-another-client") }); resp.StatusCode != http.StatusForbidden ||
				strings.Contains(body, "issued-to-another-client") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			// The flow is over: the right code now comes too late.
			if resp, _ := c.callback(alice, "github", az, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("second callback: %d", resp.StatusCode)
			}
		}},
		{"wrong or missing iss", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			for _, edit := range []func(url.Values){
				func(q url.Values) { q.Set("iss", "https://evil.example") },
				func(q url.Values) { q.Del("iss") },
			} {
				_, _, form := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
				if resp, body := c.callback(alice, "github", c.authorizeAt(alice, "github", form), edit); resp.StatusCode != http.StatusForbidden {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			}
		}},
		{"provider refuses", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			_, _, form := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
			az := c.authorizeAt(alice, "github", form)
			if resp, _ := c.callback(alice, "github", az, func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("%d", resp.StatusCode)
			}
		}},
		{"confirmation forged", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			_, _, form := c.openLink(alice, c.connectURI(aliceAT, "github"), alice)
			bad := cloneValues(form)
			bad.Set("csrf_token", "forged")
			if resp, _ := c.confirm(alice, "/connect/github", bad, "connect", nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("wrong CSRF token: %d", resp.StatusCode)
			}
			if resp, _ := c.confirm(alice, "/connect/github", form, "connect", map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("cross-site post: %d", resp.StatusCode)
			}
			if resp, _ := c.confirm(bob, "/connect/github", form, "connect", nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("another browser: %d", resp.StatusCode)
			}
			if resp, _ := c.confirm(alice, "/connect/google", form, "connect", nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("another provider's form: %d", resp.StatusCode)
			}
			if resp, _ := c.confirm(alice, "/connect/github/disconnect", form, "disconnect", nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("the connect form as a disconnect: %d", resp.StatusCode)
			}
		}},
		{"cancelled", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, _ string) {
			link := c.connectURI(aliceAT, "github")
			_, _, form := c.openLink(alice, link, alice)
			if resp, body := c.confirm(alice, "/connect/github", form, "cancel", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Nothing was changed") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if resp, _ := get(t, alice.b, link); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("link after cancel: %d", resp.StatusCode)
			}
		}},
		{"disconnect of another user's account", func(t *testing.T, c *connectRig, alice, bob *user, aliceAT, bobAT string) {
			c.connect(bob, "github", c.connectURI(bobAT, "github"))
			// Alice's disconnect form disconnects Alice, whatever she posts.
			_, _, form := c.openLink(alice, c.h.url("/connect/github/disconnect"), alice)
			if resp, _ := c.confirm(alice, "/connect/github/disconnect", form, "disconnect", nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("%d", resp.StatusCode)
			}
			if c.account(bob, "github") == nil {
				t.Fatal("Alice's disconnect removed Bob's account")
			}
			if err := c.h.as.Disconnect(context.Background(), subjectOf(bob), "github"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newConnectRig(t)
			alice, bob := c.newUser("alice"), c.newUser("bob")
			aliceAT, _ := c.accessToken(alice)
			bobAT, _ := c.accessToken(bob)
			tc.run(t, c, alice, bob, aliceAT, bobAT)
			for _, u := range []*user{alice, bob} {
				if a := c.account(u, "github"); a != nil {
					t.Errorf("%s has a github account after the attack", u.email)
				}
			}
			c.connectURI(aliceAT, "github") // still not connected
			if logs := c.h.logs.String(); strings.Contains(logs, "-at-") || strings.Contains(logs, "-rt-secret") {
				t.Error("a token reached the logs")
			}
		})
	}
}

// TestConnectGrantEnds: revoking the grant through which the user
// connected, or the provider refusing the refresh, deletes the account
// and its tokens.
func TestConnectGrantEnds(t *testing.T) {
	t.Parallel()
	t.Run("revocation", func(t *testing.T) {
		t.Parallel()
		c := newConnectRig(t)
		alice := c.newUser("alice")
		at, rt := c.accessToken(alice)
		c.connect(alice, "github", c.connectURI(at, "github"))
		a := c.account(alice, "github")
		if a == nil {
			t.Fatal("not connected")
		}
		if resp, body := c.h.post(pathRevoke, url.Values{"token": {rt}, "client_id": {publicID}}, "", ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body)
		}
		if c.account(alice, "github") != nil {
			t.Error("the account outlived its grant")
		}
		if _, err := c.h.as.store.UpstreamTokens.UpstreamTokens(context.Background(), a.Tokens); !errors.Is(err, ErrNotFound) {
			t.Errorf("the tokens outlived their grant: %v", err)
		}
		// A new login connects anew.
		at2, _ := c.accessToken(alice)
		c.connectURI(at2, "github")
	})
	t.Run("refresh token reuse", func(t *testing.T) {
		t.Parallel()
		c := newConnectRig(t)
		alice := c.newUser("alice")
		at, rt := c.accessToken(alice)
		c.connect(alice, "github", c.connectURI(at, "github"))
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}
		if res := c.h.token(form, "", ""); res.status != http.StatusOK {
			t.Fatalf("refresh: %d %s", res.status, res.body)
		}
		if res := c.h.token(form, "", ""); res.status != http.StatusBadRequest {
			t.Fatalf("reuse: %d %s", res.status, res.body)
		}
		if c.account(alice, "github") != nil {
			t.Error("the account outlived its grant's refresh token reuse")
		}
	})
	t.Run("refresh refused", func(t *testing.T) {
		t.Parallel()
		c := newConnectRig(t)
		alice := c.newUser("alice")
		at, _ := c.accessToken(alice)
		c.connect(alice, "github", c.connectURI(at, "github"))
		c.vaults["github"].refuse.Store(true)
		c.connectURI(at, "github")
		if c.account(alice, "github") != nil {
			t.Error("the account outlived the provider's refusal")
		}
	})
	t.Run("connection serves the user's other clients", func(t *testing.T) {
		t.Parallel()
		c := newConnectRig(t)
		alice := c.newUser("alice")
		at, _ := c.accessToken(alice)
		at2, _ := c.accessToken(alice)
		c.connect(alice, "github", c.connectURI(at, "github"))
		c.wantToken(at2, "github", "github-at-1")
	})
}

// TestConnectExchangeRules: only the configured resource servers get
// connected tokens or connect URIs, for live access tokens of their own
// resource.
func TestConnectExchangeRules(t *testing.T) {
	t.Parallel()
	c := newConnectRig(t)
	alice := c.newUser("alice")
	at, _ := c.accessToken(alice)
	form := url.Values{"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {at},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "audience": {"github"}}
	for _, tc := range []struct {
		name       string
		form       url.Values
		user, pass string
		code       oauthmeta.ErrorCode
	}{
		{"other confidential client", form, basicID, basicSecret, oauthmeta.CodeUnauthorizedClient},
		{"bad subject token", func() url.Values { f := cloneValues(form); f.Set("subject_token", "junk"); return f }(), rsID, rsSecret, oauthmeta.CodeInvalidGrant},
		{"unknown provider", func() url.Values { f := cloneValues(form); f.Set("audience", "slack"); return f }(), rsID, rsSecret, oauthmeta.CodeInvalidTarget},
		{"name as resource", func() url.Values { f := cloneValues(form); f.Del("audience"); f.Set("resource", "github"); return f }(), rsID, rsSecret, oauthmeta.CodeInvalidTarget},
	} {
		res := c.h.token(tc.form, tc.user, tc.pass)
		if res.err == nil || res.err.Code != tc.code || res.err.ConnectURI != "" {
			t.Errorf("%s: %d %s, want %s without connect_uri", tc.name, res.status, res.body, tc.code)
		}
	}
}

// TestConnectConfigErrors: a connect configuration that cannot work is
// refused at New.
func TestConnectConfigErrors(t *testing.T) {
	t.Parallel()
	vault := func(st UpstreamTokenStore) (Vault, error) { return &fakeVault{store: st}, nil }
	third := &fakeThird{name: "github", issuer: "https://github.example"}
	ok := ConnectProvider{Name: "github", Login: third, Vault: vault}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"without login", func(c *Config) { c.Login, c.Allow = nil, AllowList{} }},
		{"without resource servers", func(c *Config) { c.VaultResourceServers = nil }},
		{"bad name", func(c *Config) { c.Connect[0].Name = "Git Hub" }},
		{"reserved name", func(c *Config) { c.Connect[0].Name = "callback" }},
		{"name twice", func(c *Config) { c.Connect = append(c.Connect, ok) }},
		{"no login at the provider", func(c *Config) { c.Connect[0].Login = nil }},
		{"no vault", func(c *Config) { c.Connect[0].Vault = nil }},
		{"public exchange client", func(c *Config) { c.VaultResourceServers = map[string]string{publicID: testResource} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Issuer: "https://as.example", Consent: ConsentPrompt, Scopes: []string{"mcp:read"},
				Login: newFakeLogin(), Allow: AllowList{AllowAnyUser: true}, Clients: append(testClients(),
					Client{ID: rsID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}}),
				VaultResourceServers: map[string]string{rsID: testResource}, Connect: []ConnectProvider{ok}}
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
}
