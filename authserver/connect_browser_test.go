package authserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpauth/mcpauth/internal/browsertest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// loopbackLogin is the fakeLogin behind a page on 127.0.0.1 that a real
// browser can reach (once real is set; the test's own HTTP browser signs
// in at the fake directly): its /authorize sends the browser straight
// back to the authorization server's login callback.
type loopbackLogin struct {
	*fakeLogin
	at   string
	real atomic.Bool
}

func (l *loopbackLogin) Start(ctx context.Context, r *LoginRequest) (string, error) {
	if !l.real.Load() {
		return l.fakeLogin.Start(ctx, r)
	}
	return l.at + "/authorize?" + url.Values{"state": {r.State}, "nonce": {r.Nonce}}.Encode(), nil
}

// loopbackThird is a fakeThird whose authorization page is on 127.0.0.1:
// it answers at once with the code fakeThird accepts and its issuer.
type loopbackThird struct {
	*fakeThird
	at string
}

func (l *loopbackThird) AuthorizationEndpoint(context.Context) (string, error) {
	return l.at + "/authorize", nil
}

func (l *loopbackThird) Start(_ context.Context, r *LoginRequest) (string, error) {
	u, _ := l.fakeThird.Start(context.Background(), r)
	return strings.Replace(u, l.fakeThird.issuer, l.at, 1), nil
}

// TestConnectInBrowser: headless Chromium opens a connect link, signs in
// at the authorization server's login provider, is shown the
// confirmation page, confirms, goes through the provider and lands on
// "connected"; the exchange then answers with the provider's token. The
// same kind of link opened in another user's browser session is refused
// and links nothing, to either user.
func TestConnectInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	var asURL string
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		back := url.Values{"state": {r.URL.Query().Get("state")}, "code": {"c"}}
		http.Redirect(w, r, asURL+pathUpstreamCallback+"?"+back.Encode(), http.StatusFound)
	}))
	defer idp.Close()
	thirdPage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back := url.Values{"state": {q.Get("state")}, "code": {"ok:" + q.Get("code_challenge")}, "iss": {"https://github.example"}}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
	}))
	defer thirdPage.Close()

	var login *loopbackLogin
	c := &connectRig{t: t, third: map[string]*fakeThird{}, vaults: map[string]*fakeVault{}}
	c.h, c.idp = upstreamHarness(t, func(cfg *Config) {
		login = &loopbackLogin{fakeLogin: cfg.Login.(*fakeLogin), at: idp.URL}
		cfg.Login = login
		cfg.Clients = append(cfg.Clients, Client{ID: rsID, Secret: rsSecret,
			GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
		cfg.VaultResourceServers = map[string]string{rsID: testResource}
		for _, name := range []string{"github", "google"} {
			f := &fakeThird{name: name, issuer: "https://" + name + ".example"}
			v := &fakeVault{}
			c.third[name], c.vaults[name] = f, v
			cfg.Connect = append(cfg.Connect, ConnectProvider{Name: name, DisplayName: strings.ToUpper(name[:1]) + name[1:],
				Login: &loopbackThird{fakeThird: f, at: thirdPage.URL}, Vault: func(st UpstreamTokenStore) (Vault, error) { v.store = st; return v, nil }})
		}
	})
	asURL = strings.TrimSuffix(c.h.issuer, "/")
	alice, bob := c.newUser("alice"), c.newUser("bob")
	at, _ := c.accessToken(alice)
	login.real.Store(true) // from here on the login is Chromium's

	// shows waits until an element of the page, the one after any
	// navigation under way, has s in its text (a DOM condition, no sleep).
	shows := func(s string) error {
		return chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//*[contains(text(), "`+s+`")]`)))
	}
	t.Run("connect", func(t *testing.T) {
		link := c.connectURI(at, "github")
		c.mu.Lock()
		c.as(alice)
		err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("confirm")))
		var shown string
		if err == nil {
			shown, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		}
		if err == nil {
			err = chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm")))
		}
		if err == nil {
			err = shows("account is connected")
		}
		c.mu.Unlock()
		if err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%v (the browser is at %s)", err, loc)
		}
		if !strings.Contains(shown, "Github") || !strings.Contains(shown, "alice@example.com") {
			t.Errorf("the confirmation page does not name the provider and the user:\n%s", shown)
		}
		c.wantToken(at, "github", "github-at-1")
	})
	t.Run("link opened in another user's browser", func(t *testing.T) {
		link := c.connectURI(at, "google")
		c.mu.Lock()
		c.as(bob) // the browser's user signs in as bob
		err := chromedp.Do(ctx, chromedp.Navigate(link))
		if err == nil {
			err = shows("made for another user")
		}
		c.mu.Unlock()
		if err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%v (the browser is at %s)", err, loc)
		}
		if c.account(alice, "google") != nil || c.account(bob, "google") != nil {
			t.Fatal("a refused link connected an account")
		}
		c.connectURI(at, "google") // still not connected
	})
}
