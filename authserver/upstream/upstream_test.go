package upstream

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// upstreamHarness starts an authorization server logging users in at p.
func upstreamHarness(t *testing.T, mutate func(*testConfig)) (*harness, *fakeProvider) {
	var p *fakeProvider
	h := newHarness(t, "", func(c *testConfig) {
		p = newFakeProvider(t, c.Now)
		withUpstream(c, p)
		if mutate != nil {
			mutate(c)
		}
	})
	return h, p
}

// withUpstream makes c log users in at p, with the consent page.
func withUpstream(c *testConfig, p *fakeProvider) {
	c.Consent = authserver.ConsentPrompt
	c.Upstream = &upstreamConfig{
		Issuer: p.issuer, ClientID: upstreamClientID, ClientSecret: upstreamClientSecret,
		Allow: authserver.AllowList{EmailDomains: []string{"example.com"}},
		Fetch: authserver.KeyFetchConfig{InsecureAllowHTTPLoopback: true},
	}
}

// do sends a GET in b's browser.
func (b *browser) do(rawURL string) *http.Response {
	b.t.Helper()
	resp, err := b.client.Get(rawURL)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// toUpstream loads our consent page, approves it, and returns the URL of
// the provider's authorization endpoint we were sent to.
func (b *browser) toUpstream(q url.Values) *url.URL {
	b.t.Helper()
	resp, _, form := b.page(q)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("authorize: status %d, want the consent page", resp.StatusCode)
	}
	form.Set("action", "approve")
	resp = b.submit(form, nil)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		b.t.Fatalf("consent: status %d", resp.StatusCode)
	}
	return location(b.t, resp)
}

// login runs the whole login: our consent, the provider, our callback; it
// returns our final response (the redirect to the MCP client, or a page).
func (b *browser) login(q url.Values) *http.Response {
	b.t.Helper()
	up := b.toUpstream(q)
	back := location(b.t, b.do(up.String()))
	return b.do(back.String())
}

func TestUpstreamLogin(t *testing.T) {
	h, p := upstreamHarness(t, nil)
	b := newBrowser(t, h)
	q, verifier := authParams(publicID, publicCB)
	q.Set("scope", "mcp:read")
	// The consent page names the provider, and its CSP lets the form's
	// redirect go there (form-action applies to redirects).
	resp, body, _ := b.page(q)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1 "+p.issuer) ||
		!strings.Contains(body, strings.TrimPrefix(p.issuer, "http://")) {
		t.Errorf("consent page CSP %q, body mentions provider: %v", csp, strings.Contains(body, p.issuer))
	}
	up := b.toUpstream(q)
	if !strings.HasPrefix(up.String(), p.issuer+"/authorize?") {
		t.Fatalf("sent to %s, want the provider", up)
	}
	uq := up.Query()
	for k, want := range map[string]string{
		"client_id": upstreamClientID, "redirect_uri": h.as.UpstreamCallbackURL(), "response_type": "code",
		"code_challenge_method": "S256", "scope": "openid email profile",
	} {
		if got := uq.Get(k); got != want {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}
	if len(uq.Get("state")) < 43 || len(uq.Get("nonce")) < 43 || uq.Get("code_challenge") == "" {
		t.Errorf("upstream request lacks a strong state, nonce or challenge: %v", uq)
	}
	resp = b.do(location(t, b.do(up.String())).String())
	loc := location(t, resp)
	if loc.Query().Get("error") != "" || loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
		t.Fatalf("final redirect %s", loc)
	}
	res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	_, claims := h.verifyJWT(res.tok.AccessToken)
	if want := Subject(p.issuer, "alice-123"); claims["sub"] != want {
		t.Errorf("sub = %v, want %s", claims["sub"], want)
	}
	if strings.Contains(h.logs.String(), "upstream-at") {
		t.Error("the upstream access token was logged")
	}
}

func TestUpstreamSubjectStable(t *testing.T) {
	a := Subject("https://idp.example", "alice")
	if a != Subject("https://idp.example", "alice") || !strings.HasPrefix(a, "u-") || len(a) != 45 {
		t.Errorf("UpstreamSubject = %q", a)
	}
	for _, other := range []string{
		Subject("https://idp.example/", "alice"), Subject("https://idp.example", "alice2"),
		Subject("https://idp.examplea", "lice"),
	} {
		if other == a {
			t.Errorf("collision: %s", other)
		}
	}
}

// TestUpstreamConfusedDeputy replays CVE-2026-27124: the attacker approves
// their own client on our consent page, captures the URL we send them to
// upstream, and has the victim open it. The victim is already logged in
// upstream and approved this server there, so the provider redirects back
// at once; our callback must refuse it, since this browser never consented.
func TestUpstreamConfusedDeputy(t *testing.T) {
	h, _ := upstreamHarness(t, nil)
	attacker, victim := newBrowser(t, h), newBrowser(t, h)
	// The victim used this server before: they have cookies of their own.
	vq, _ := authParams(publicID, publicCB)
	if loc := location(t, victim.login(vq)); loc.Query().Get("code") == "" {
		t.Fatalf("victim's own login failed: %s", loc)
	}
	q, _ := authParams(webID, webCB)
	up := attacker.toUpstream(q)
	back := location(t, victim.do(up.String()))
	resp := victim.do(back.String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
		t.Fatalf("victim got %d %s: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if !strings.Contains(string(body), "another browser") {
		t.Errorf("page does not say why: %s", body)
	}
	// The attacker cannot redeem it afterwards either: the provider's code
	// went to the victim, and the state was not burnt by the victim's try.
	for _, b := range []*browser{victim, newBrowser(t, h)} {
		if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
			t.Errorf("replay in another browser: %d", resp.StatusCode)
		}
	}
}

// TestUpstreamCookieRenewed: a second login in one browser keeps the
// binding cookie's value and renews its lifetime, so a login started near
// the end of an earlier one's cookie life can still come back.
func TestUpstreamCookieRenewed(t *testing.T) {
	h, _ := upstreamHarness(t, nil)
	b := newBrowser(t, h)
	var values []string
	for range 2 {
		q, _ := authParams(publicID, publicCB)
		_, _, form := b.page(q)
		form.Set("action", "approve")
		resp := b.submit(form, nil)
		var found bool
		for _, c := range resp.Cookies() {
			if c.Name == upstreamCookie {
				found = true
				values = append(values, c.Value)
				if c.MaxAge != int(loginTTL.Seconds()) || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
					t.Errorf("binding cookie %+v", c)
				}
			}
		}
		if !found {
			t.Fatalf("login %d did not set the binding cookie", len(values)+1)
		}
	}
	if values[0] != values[1] {
		t.Errorf("the second login replaced the binding cookie's value")
	}
}

func TestUpstreamStateSingleUse(t *testing.T) {
	h, _ := upstreamHarness(t, nil)
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	up := b.toUpstream(q)
	back := location(t, b.do(up.String()))
	if loc := location(t, b.do(back.String())); loc.Query().Get("code") == "" {
		t.Fatalf("first use: %s", loc)
	}
	if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
		t.Errorf("replayed state: %d, want 403", resp.StatusCode)
	}
	// Expired: a state older than its lifetime is refused.
	up = b.toUpstream(q)
	back = location(t, b.do(up.String()))
	h.clock.Advance(loginTTL + time.Second)
	if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
		t.Errorf("expired state: %d, want 403", resp.StatusCode)
	}
}

// TestUpstreamStateSwapped: two logins in one browser, the provider's
// answer to the first delivered with the second's state: we redeem the
// code with the second login's PKCE verifier, the provider refuses it, and
// the client gets no code. (Were PKCE skipped, the second login's nonce
// would refuse the ID token: TestUpstreamIDTokenRefused.)
func TestUpstreamStateSwapped(t *testing.T) {
	h, _ := upstreamHarness(t, nil)
	b := newBrowser(t, h)
	q1, _ := authParams(publicID, publicCB)
	q2, _ := authParams(publicID, publicCB)
	back1 := location(t, b.do(b.toUpstream(q1).String()))
	back2 := location(t, b.do(b.toUpstream(q2).String()))
	swapped := back1.Query()
	swapped.Set("state", back2.Query().Get("state"))
	back1.RawQuery = swapped.Encode()
	loc := location(t, b.do(back1.String()))
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
		t.Fatalf("swapped state: %s", loc)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "upstream token endpoint refused the code") {
		t.Errorf("refused, but not by the provider's PKCE check: %s", logs)
	}
}

func TestUpstreamIDTokenRefused(t *testing.T) {
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name   string
		claims func(c map[string]any)
		signer *ecdsa.PrivateKey
		reason string // what the log says was wrong
	}{
		{"nonce of another login", func(c map[string]any) { c["nonce"] = "replayed-nonce" }, nil, "nonce does not match"},
		{"no nonce", func(c map[string]any) { delete(c, "nonce") }, nil, "nonce does not match"},
		{"another audience", func(c map[string]any) { c["aud"] = "someone-else"; delete(c, "azp") }, nil, "aud does not contain"},
		{"azp another client", func(c map[string]any) { c["azp"] = "someone-else" }, nil, "azp is another client"},
		{"several audiences without azp", func(c map[string]any) { c["aud"] = []string{upstreamClientID, "x"}; delete(c, "azp") }, nil, "azp is required"},
		{"another issuer", func(c map[string]any) { c["iss"] = "http://127.0.0.1:1" }, nil, "iss is another issuer"},
		{"expired", func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }, nil, "jwtverify: token expired"},
		{"no exp", func(c map[string]any) { delete(c, "exp") }, nil, "jwtverify: token has no expiry"},
		{"no sub", func(c map[string]any) { delete(c, "sub") }, nil, "sub is missing"},
		{"unknown key", nil, other, "no key of the provider verifies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, p := upstreamHarness(t, nil)
			p.set(func(p *fakeProvider) {
				p.signer = tc.signer
				p.claims = func(req url.Values) map[string]any {
					c := p.defaultClaims(req)
					if tc.claims != nil {
						tc.claims(c)
					}
					return c
				}
			})
			if tc.name == "expired" {
				p.set(func(p *fakeProvider) {
					p.claims = func(req url.Values) map[string]any {
						c := p.defaultClaims(req)
						c["exp"] = h.clock.Now().Add(-2 * time.Minute).Unix()
						return c
					}
				})
			}
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			loc := location(t, b.login(q))
			if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" ||
				loc.Query().Get("iss") != h.issuer || loc.Query().Get("state") != q.Get("state") {
				t.Fatalf("got %s", loc)
			}
			if logs := h.logs.String(); !strings.Contains(logs, tc.reason) {
				t.Errorf("refused, but not because %q: %s", tc.reason, logs)
			}
		})
	}
}

// TestUpstreamIDTokenEmptyNonce: a login whose stored nonce is empty
// matches no ID token, not even one without a nonce.
func TestUpstreamIDTokenEmptyNonce(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	u := newOIDC(&client{cfg: Config{Issuer: "https://idp.example", ClientID: upstreamClientID}, now: func() time.Time { return now }})
	exp := float64(now.Add(time.Minute).Unix())
	c := idTokenClaims{Claims: jwtverify.Claims{
		Issuer: u.cfg.Issuer, Subject: "alice", Audience: oauthmeta.Audience{upstreamClientID}, Expiry: &exp,
	}}
	if err := u.checkIDClaims(&c, u.cfg.Issuer, "n-1"); !errors.Is(err, errIDToken) {
		t.Fatalf("nonce missing from the token: %v", err)
	}
	if err := u.checkIDClaims(&c, u.cfg.Issuer, ""); !errors.Is(err, errIDToken) {
		t.Fatalf("empty nonce on both sides accepted: %v", err)
	}
	c.Nonce = "n-1"
	if err := u.checkIDClaims(&c, u.cfg.Issuer, "n-1"); err != nil {
		t.Fatalf("matching nonce: %v", err)
	}
}

func TestUpstreamErrorAccessDenied(t *testing.T) {
	h, p := upstreamHarness(t, nil)
	p.set(func(p *fakeProvider) { p.authError = "access_denied" })
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	loc := location(t, b.login(q))
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
		t.Fatalf("got %s", loc)
	}
}

func TestUpstreamUnavailable(t *testing.T) {
	for _, mode := range []string{"down", "slow"} {
		// Discovery fails: the authorization request gets a page at once,
		// before the user approves anything.
		t.Run("discovery "+mode, func(t *testing.T) {
			h, p := upstreamHarness(t, func(c *testConfig) { c.Upstream.Timeout = 300 * time.Millisecond })
			p.set(func(p *fakeProvider) {
				if mode == "down" {
					p.down = true
				} else {
					p.hang = make(chan struct{})
				}
			})
			q, _ := authParams(publicID, publicCB)
			resp, body, _ := newBrowser(t, h).page(q)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "identity provider could not be reached") {
				t.Fatalf("got %d: %s", resp.StatusCode, body)
			}
		})
		// The token endpoint fails after the user logged in upstream: the
		// MCP client gets temporarily_unavailable with state and iss.
		t.Run("token endpoint "+mode, func(t *testing.T) {
			h, p := upstreamHarness(t, func(c *testConfig) { c.Upstream.Timeout = 300 * time.Millisecond })
			p.set(func(p *fakeProvider) { p.tokenMode = mode })
			q, _ := authParams(publicID, publicCB)
			loc := location(t, newBrowser(t, h).login(q))
			if loc.Query().Get("error") != "temporarily_unavailable" || loc.Query().Get("state") != q.Get("state") ||
				loc.Query().Get("iss") != h.issuer {
				t.Fatalf("got %s", loc)
			}
			if logs := h.logs.String(); strings.Contains(logs, "code_verifier") || strings.Contains(logs, "request was") {
				t.Errorf("the token endpoint's error page reached the log: %s", logs)
			}
		})
	}
}

// TestUpstreamDiscoveryShared: while discovery hangs, other logins share
// the one fetch instead of queueing behind it, and one whose browser left
// stops waiting at once.
func TestUpstreamDiscoveryShared(t *testing.T) {
	h, p := upstreamHarness(t, func(c *testConfig) { c.Upstream.Timeout = time.Minute })
	var fetches atomic.Int32
	hang := make(chan struct{})
	p.set(func(p *fakeProvider) { p.hang = hang; p.onDiscovery = func() { fetches.Add(1) } })
	q, _ := authParams(publicID, publicCB)
	first := make(chan int)
	go func() {
		resp, err := h.http.Get(h.url("/authorize?" + q.Encode()))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for fetches.Load() == 0 {
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.as.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, h.url("/authorize?"+q.Encode()), nil))
		done <- rec.Code
	}()
	select {
	case code := <-done:
		if code != http.StatusBadGateway {
			t.Errorf("gone browser: status %d, want 502", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a login whose browser left waits for another login's discovery")
	}
	p.set(func(p *fakeProvider) { p.hang = nil })
	close(hang)
	if code := <-first; code != http.StatusBadGateway {
		t.Errorf("first login: status %d, want 502", code)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d discovery fetches, want 1", n)
	}
}

// TestUpstreamDiscoveryAfterClose: a discovery that ends after the server
// closed leaves no key source behind that nothing would close.
func TestUpstreamDiscoveryAfterClose(t *testing.T) {
	h, _ := upstreamHarness(t, nil)
	if err := h.login.Close(); err != nil {
		t.Fatal(err)
	}
	u := h.login.(*oidcProvider)
	if _, err := u.metadata(context.Background()); err == nil {
		t.Fatal("discovery after Close succeeded")
	}
	if u.keys != nil {
		t.Fatal("discovery after Close set up a key source")
	}
}

func TestUpstreamUserRefused(t *testing.T) {
	h, _ := upstreamHarness(t, func(c *testConfig) { c.Upstream.Allow = authserver.AllowList{EmailDomains: []string{"example.org"}} })
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	loc := location(t, b.login(q))
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" ||
		loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
		t.Fatalf("got %s", loc)
	}
}

func TestUpstreamGroupsClaim(t *testing.T) {
	h, p := upstreamHarness(t, func(c *testConfig) {
		c.Upstream.GroupsClaim = "roles"
		c.Upstream.Allow = authserver.AllowList{Groups: []string{"mcp-users"}}
	})
	p.set(func(p *fakeProvider) {
		p.claims = func(req url.Values) map[string]any {
			c := p.defaultClaims(req)
			c["roles"] = "mcp-users"
			return c
		}
	})
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	if loc := location(t, b.login(q)); loc.Query().Get("code") == "" {
		t.Fatalf("got %s", loc)
	}
}

// TestUpstreamRememberedConsent: with an upstream login and
// RememberConsent, a request that may use a remembered consent (a
// navigation from our own site, in a browser that approved before) goes to
// the login first: the page is skipped after it for the same user, client,
// redirect URI and scopes, and shown for more scopes. Every other request
// (cross-site, GHSA-6x8h-498w-gv8c; without fetch metadata; from a new
// browser) gets the consent page before the login, as without
// RememberConsent.
func TestUpstreamRememberedConsent(t *testing.T) {
	h, _ := upstreamHarness(t, func(c *testConfig) { c.RememberConsent = true })
	b := newBrowser(t, h)
	req := func(scope string) url.Values {
		q, _ := authParams(publicID, publicCB)
		q.Set("scope", scope)
		return q
	}
	// through follows our redirect to the provider and its redirect back to
	// our callback, and returns our answer there.
	through := func(b *browser, resp *http.Response) *http.Response {
		t.Helper()
		up := location(t, resp)
		return b.do(location(t, b.do(up.String())).String())
	}
	approve := func(b *browser, resp *http.Response) *http.Response {
		t.Helper()
		body, _ := io.ReadAll(resp.Body)
		form := url.Values{"action": {"approve"}}
		for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
			form.Set(m[1], m[2])
		}
		return b.submit(form, nil)
	}
	// The first time: our page, then the login, then a code.
	first := b.navigate(req("mcp:read"), fetchSite("none"))
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first authorization: %d, want the consent page before the login", first.StatusCode)
	}
	if loc := location(t, through(b, approve(b, first))); loc.Query().Get("code") == "" {
		t.Fatalf("approval and login: %s", loc)
	}
	t.Run("same-origin navigation in the approving browser", func(t *testing.T) {
		consentSkipped(t, through(b, b.navigate(req("mcp:read"), fetchSite("same-origin"))))
	})
	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"cross-site navigation", fetchSite("cross-site")},
		{"none", fetchSite("none")},
		{"no fetch metadata", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			consentShown(t, b.navigate(req("mcp:read"), tc.hdr))
		})
	}
	t.Run("new browser", func(t *testing.T) {
		consentShown(t, newBrowser(t, h).navigate(req("mcp:read"), fetchSite("same-origin")))
	})
	t.Run("more scopes", func(t *testing.T) {
		page := through(b, b.navigate(req("mcp:read mcp:write"), fetchSite("same-origin")))
		if page.StatusCode != http.StatusOK {
			t.Fatalf("more scopes: %d, want the consent page after the login", page.StatusCode)
		}
		if loc := location(t, approve(b, page)); loc.Query().Get("code") == "" {
			t.Fatalf("approving more scopes: %s", loc)
		}
		consentSkipped(t, through(b, b.navigate(req("mcp:read mcp:write"), fetchSite("same-origin"))))
	})
}

func TestUpstreamConfigErrors(t *testing.T) {
	base := func() *upstreamConfig {
		return &upstreamConfig{Issuer: "https://idp.example", ClientID: "c", Allow: authserver.AllowList{AllowAnyUser: true}}
	}
	tests := []struct {
		name   string
		mutate func(c *testConfig)
	}{
		{"no allow-list", func(c *testConfig) { c.Upstream.Allow = authserver.AllowList{} }},
		{"no client id", func(c *testConfig) { c.Upstream.ClientID = "" }},
		{"http issuer", func(c *testConfig) { c.Upstream.Issuer = "http://idp.example" }},
		{"loopback without switch", func(c *testConfig) { c.Upstream.Issuer = "http://127.0.0.1:9" }},
		{"issuer with query", func(c *testConfig) { c.Upstream.Issuer = "https://idp.example?x=1" }},
		{"auto consent", func(c *testConfig) { c.Consent = authserver.ConsentAuto }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig{Config: authserver.Config{Issuer: "https://as.example"}, Upstream: base()}
			tc.mutate(&cfg)
			if _, _, err := newServer(t, cfg); !errors.Is(err, authserver.ErrConfig) {
				t.Fatalf("New: %v, want a ConfigError", err)
			}
		})
	}
}

func TestUpstreamPrivateKeyJWT(t *testing.T) {
	key := mustKey(t)
	for _, tc := range []struct {
		name  string
		key   *ecdsa.PrivateKey
		works bool
	}{{"registered key", key, true}, {"another key", mustKey(t), false}} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := upstreamHarness(t, func(c *testConfig) {
				c.Upstream.ClientSecret = ""
				c.Upstream.ClientKey, c.Upstream.ClientKeyID = tc.key, "as-key-1"
			})
			p.set(func(p *fakeProvider) { p.clientKey = &key.PublicKey })
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			loc := location(t, b.login(q))
			if got := loc.Query().Get("code") != ""; got != tc.works {
				t.Fatalf("got %s", loc)
			}
		})
	}
	cfg := testConfig{Config: authserver.Config{Issuer: "https://as.example"}, Upstream: &upstreamConfig{Issuer: "https://idp.example", ClientID: "c",
		ClientSecret: "s", ClientKey: key, Allow: authserver.AllowList{AllowAnyUser: true}}}
	if _, _, err := newServer(t, cfg); !errors.Is(err, authserver.ErrConfig) {
		t.Errorf("secret and key together: %v", err)
	}
}

// TestUpstreamLoginEveryStore: logins in progress live in the
// authserver.PendingStore, so a login completes on memory, bbolt and PostgreSQL
// alike; the stored record is keyed by a hash of the state, never the
// state itself, and is taken once.
func TestUpstreamLoginEveryStore(t *testing.T) {
	for name, open := range storeKinds(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			h, _ := upstreamHarness(t, func(c *testConfig) { c.Storage = st })
			b := newBrowser(t, h)
			q, verifier := authParams(publicID, publicCB)
			up := b.toUpstream(q)
			state := up.Query().Get("state")
			if _, err := st.Pending.TakePending(context.Background(), state, h.clock.Now(),
				func(*authserver.PendingAuthorization) bool { return true }); !errors.Is(err, authserver.ErrNotFound) {
				t.Fatalf("the raw state is a key of the store: %v", err)
			}
			back := location(t, b.do(up.String()))
			loc := location(t, b.do(back.String()))
			if res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil); res.tok == nil {
				t.Fatalf("token: %d %s", res.status, res.body)
			}
			if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
				t.Errorf("replayed state: %d", resp.StatusCode)
			}
		})
	}
}

// TestExpiresIn: a refreshed token's lifetime is its expires_in, a JSON
// integer or a string of digits, of at most nine digits (some thirty
// years); anything else gives no lifetime, never a wrong one.
func TestExpiresIn(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		raw  string // the expires_in member; "" means none
		want int64  // 0: no lifetime
	}{
		{`3600`, 3600},
		{`"3600"`, 3600},
		{`0003600`, 0}, // not JSON
		{`999999999`, 999999999},
		{`"999999999"`, 999999999},
		{`1000000000`, 0},
		{`18446744073709551616`, 0},
		{`99999999999999999999999`, 0},
		{`0`, 0},
		{`""`, 0},
		{``, 0},
		{`-1`, 0},
		{`"-3600"`, 0},
		{`+3600`, 0},
		{`3600.5`, 0},
		{`3.6e3`, 0},
		{`"3_600"`, 0},
		{`"0x10"`, 0},
		{`" 3600"`, 0},
		{`null`, 0},
		{`true`, 0},
	} {
		body := `{"access_token":"at","token_type":"Bearer"`
		if tc.raw != "" {
			body += `,"expires_in":` + tc.raw
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body+"}")
		}))
		c := &client{cfg: Config{ClientID: "c", ClientSecret: "s"}, now: func() time.Time { return now },
			fetcher: safehttp.New(safehttp.Options{InsecureAllowHTTPLoopback: true, Timeout: 5 * time.Second})}
		p := &oauth2Provider{client: c, meta: &oauthmeta.AuthServerMetadata{TokenEndpoint: srv.URL}}
		tok, err := c.refreshAt(context.Background(), p, "rt")
		srv.Close()
		var got int64
		if err == nil && !tok.Expiry.IsZero() {
			got = int64(tok.Expiry.Sub(now) / time.Second)
		}
		if got != tc.want {
			t.Errorf("expires_in %s: lifetime %d s (err %v), want %d", tc.raw, got, err, tc.want)
		}
	}
}
