package authserver

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

var hiddenField = regexp.MustCompile(`name="(request|csrf_token)" value="([^"]*)"`)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, standing in for a user's browser.
type browser struct {
	t      *testing.T
	h      *harness
	client *http.Client
}

func newBrowser(t *testing.T, h *harness) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, client: &http.Client{
		Jar: jar, Transport: ownTransport(t), Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page loads the consent page and returns the response, the body and the
// form fields.
func (b *browser) page(q url.Values) (*http.Response, string, url.Values) {
	b.t.Helper()
	resp, err := b.client.Get(b.h.url("/authorize?" + q.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	return resp, string(body), form
}

// submit posts the consent form like a browser on the server's own page.
func (b *browser) submit(form url.Values, headers map[string]string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.h.url(pathConsent), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(b.h.issuer)
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func promptHarness(t *testing.T, mutate func(*Config)) *harness {
	return newHarness(t, "", func(c *Config) {
		c.Consent = ConsentPrompt
		if mutate != nil {
			mutate(c)
		}
	})
}

// TestConsentPage covers requirements AS-14 and CIMD-10: what the page
// shows and the headers that protect it.
func TestConsentPage(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, nil)
	b := newBrowser(t, h)
	q, _ := authParams(localhostID, localhostCB)
	q.Set("scope", "mcp:read mcp:write")
	q.Set("resource", testResource)
	resp, body, form := b.page(q)
	if resp.StatusCode != http.StatusOK || form.Get("request") == "" || form.Get("csrf_token") == "" {
		t.Fatalf("status %d, form %v", resp.StatusCode, form)
	}
	hdr := resp.Header
	csp := hdr.Get("Content-Security-Policy")
	for _, want := range []string{"frame-ancestors 'none'", "default-src 'none'", "form-action 'self' http://localhost:3000", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("AS-14: CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("AS-14: CSP allows scripts: %q", csp)
	}
	if hdr.Get("X-Frame-Options") != "DENY" || hdr.Get("Cache-Control") != "no-store" || hdr.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("AS-14 headers: %v", hdr)
	}
	for _, want := range []string{
		"Localhost App",          // client name
		"localhost:3000",         // redirect URI host (CIMD-10 MUST)
		`id="localhost-warning"`, // localhost-only warning
		"mcp:read", "mcp:write",  // scopes
		testResource,      // resource
		`name="viewport"`, // readable on a phone
		`value="approve"`, `value="deny"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("AS-14: page lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(body), "<script") || strings.Contains(body, "style=") || strings.Contains(body, "<style") {
		t.Error("AS-14: page has inline script or style")
	}
	// No localhost warning for a client with a real https redirect.
	q2, _ := authParams(webID, webCB)
	if _, body2, _ := b.page(q2); strings.Contains(body2, `id="localhost-warning"`) || !strings.Contains(body2, "app.example.com") {
		t.Error("AS-14: warning or redirect host wrong for an https client")
	}
	css := h.get(h.url(pathAssets))
	if css.StatusCode != 200 || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("stylesheet: %d", css.StatusCode)
	}
}

// TestConsentDecision covers requirements AS-13 and AS-14: approving and
// denying answer with 303; the code works; state and iss are sent.
func TestConsentDecision(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, nil)
	for _, action := range []string{"approve", "deny"} {
		t.Run("AS-13 "+action, func(t *testing.T) {
			t.Parallel()
			b := newBrowser(t, h)
			q, v := authParams(publicID, publicCB)
			_, _, form := b.page(q)
			form.Set("action", action)
			resp := b.submit(form, nil)
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("AS-13: status %d, want 303", resp.StatusCode)
			}
			got := location(t, resp).Query()
			if got.Get("state") != q.Get("state") || got.Get("iss") != h.issuer {
				t.Fatalf("state/iss: %v", got)
			}
			if action == "deny" {
				if got.Get("error") != string(oauthmeta.CodeAccessDenied) || got.Has("code") {
					t.Fatalf("deny: %v", got)
				}
				return
			}
			if res := h.exchange(got.Get("code"), v, publicCB, nil); res.status != http.StatusOK {
				t.Fatalf("exchange: %d %s", res.status, res.body)
			}
		})
	}
}

// TestConsentCSRF covers requirement AS-14's CSRF protection: the form
// only works with its own token, from the browser that loaded it, from this
// origin, once.
func TestConsentCSRF(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, nil)
	tests := []struct {
		name    string
		mutate  func(form url.Values)
		headers map[string]string
		other   bool // submit from another browser (no cookie)
	}{
		{"AS-14 missing CSRF token", func(f url.Values) { f.Del("csrf_token") }, nil, false},
		{"AS-14 wrong CSRF token", func(f url.Values) { f.Set("csrf_token", f.Get("csrf_token")+"x") }, nil, false},
		{"AS-14 unknown request", func(f url.Values) { f.Set("request", "nope") }, nil, false},
		{"AS-14 another browser", nil, nil, true},
		{"AS-14 cross-site POST", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"AS-14 foreign Origin", nil, map[string]string{"Origin": "https://evil.example"}, false},
		{"AS-14 null Origin", nil, map[string]string{"Origin": "null"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			_, _, form := b.page(q)
			form.Set("action", "approve")
			good := url.Values{}
			for k, v := range form {
				good[k] = v
			}
			if tt.mutate != nil {
				tt.mutate(form)
			}
			sub := b
			if tt.other {
				sub = newBrowser(t, h)
			}
			resp := sub.submit(form, tt.headers)
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q; want 403 without redirect", resp.StatusCode, resp.Header.Get("Location"))
			}
			// The rightful submission still works afterwards.
			if ok := b.submit(good, nil); ok.StatusCode != http.StatusSeeOther {
				t.Fatalf("rightful submission after the attack: %d", ok.StatusCode)
			}
			// And only once.
			if again := b.submit(good, nil); again.StatusCode != http.StatusForbidden {
				t.Fatalf("replayed submission: %d", again.StatusCode)
			}
		})
	}
}

// TestConsentEscaping: a client-chosen name is shown as text, never markup.
func TestConsentEscaping(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, nil)
	info := h.register(t, `{"client_name":"<script>alert(1)</script><b>x</b>","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none","application_type":"native"}`)
	q, _ := authParams(info.ClientID, "http://127.0.0.1/cb")
	_, body, _ := newBrowser(t, h).page(q)
	if strings.Contains(body, "<script>") || strings.Contains(body, "<b>x") || !strings.Contains(body, "&lt;script&gt;") {
		t.Fatal("client name not escaped")
	}
	if !strings.Contains(body, "not verified") {
		t.Fatal("a self-registered name is not marked as unverified")
	}
}

// TestConsentModes covers the deny mode and remembered consent, and
// requirement AS-20: consent is per client, so a new client_id with an old
// consent still sees the page.
func TestConsentModes(t *testing.T) {
	t.Parallel()
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", func(c *Config) { c.Consent = ConsentDeny })
		q, _ := authParams(publicID, publicCB)
		got := location(t, h.authorize(q)).Query()
		if got.Get("error") != "access_denied" || got.Get("iss") != h.issuer || got.Get("state") != q.Get("state") {
			t.Fatalf("%v", got)
		}
	})
	t.Run("AS-20 remembered consent is per client", func(t *testing.T) {
		t.Parallel()
		h := promptHarness(t, func(c *Config) { c.RememberConsent = true })
		b := newBrowser(t, h)
		q, _ := authParams(publicID, publicCB)
		q.Set("scope", "mcp:read")
		_, _, form := b.page(q)
		form.Set("action", "approve")
		if resp := b.submit(form, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("approve: %d", resp.StatusCode)
		}
		q2, _ := authParams(publicID, publicCB)
		q2.Set("scope", "mcp:read")
		if resp := b.navigate(q2, fetchSite("same-origin")); resp.StatusCode != http.StatusFound || !location(t, resp).Query().Has("code") {
			t.Fatalf("same client, same scope: %d, want a direct redirect", resp.StatusCode)
		}
		q3, _ := authParams(publicID, publicCB)
		q3.Set("scope", "mcp:read mcp:write")
		if resp, _, f := b.page(q3); resp.StatusCode != http.StatusOK || f.Get("request") == "" {
			t.Fatalf("wider scope: %d, want the page", resp.StatusCode)
		}
		q4, _ := authParams(basicID, publicCB)
		q4.Set("scope", "mcp:read")
		if resp, _, f := b.page(q4); resp.StatusCode != http.StatusOK || f.Get("request") == "" {
			t.Fatalf("AS-20: new client_id: %d, want the page", resp.StatusCode)
		}
	})
}

// TestConsentCookie covers requirement AS-20's cookie rules: __Host-,
// Secure, HttpOnly and SameSite on https; on plain-http loopback the prefix
// and Secure are impossible, so the cookie is unprefixed but still HttpOnly
// and SameSite=Strict.
func TestConsentCookie(t *testing.T) {
	t.Parallel()
	s := mustNew(t, Config{Issuer: "https://as.example.com", Clients: testClients(), Scopes: []string{"mcp:read"}})
	q, _ := authParams(webID, webCB)
	rec := serve(s, http.MethodGet, "https://as.example.com/authorize?"+q.Encode())
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	c := rec.Result().Cookies()
	if len(c) != 1 || c[0].Name != "__Host-mcpauth-consent" || !c[0].Secure || !c[0].HttpOnly ||
		c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/" || c[0].Domain != "" {
		t.Fatalf("AS-20 https cookie: %+v", c)
	}

	h := promptHarness(t, nil)
	resp, _, _ := newBrowser(t, h).page(func() url.Values { q, _ := authParams(publicID, publicCB); return q }())
	hc := resp.Cookies()
	if len(hc) != 1 || hc[0].Name != "mcpauth-consent" || hc[0].Secure || !hc[0].HttpOnly || hc[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("http loopback cookie: %+v", hc)
	}
}

// TestConsentPendingExpires: a consent page answered after 10 minutes is
// refused without redirect.
func TestConsentPendingExpires(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, nil)
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	_, _, form := b.page(q)
	form.Set("action", "approve")
	h.clock.Advance(PendingTTL)
	if resp := b.submit(form, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// navigate sends GET /authorize?q from b with the given request headers
// (a browser's fetch metadata, see fetchSite).
func (b *browser) navigate(q url.Values, hdr map[string]string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.h.url("/authorize?"+q.Encode()), nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// fetchSite is the fetch metadata of a browser's top-level navigation
// whose Sec-Fetch-Site is site.
func fetchSite(site string) map[string]string {
	return map[string]string{"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
}

// approveIn loads the consent page for q in b, as a navigation the user
// started (Sec-Fetch-Site none: an MCP client opened the browser), and
// approves it.
func approveIn(t *testing.T, b *browser, q url.Values) url.Values {
	t.Helper()
	resp := b.navigate(q, fetchSite("none"))
	body, _ := io.ReadAll(resp.Body)
	form := url.Values{"action": {"approve"}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if resp.StatusCode != http.StatusOK || form.Get("request") == "" {
		t.Fatalf("first authorization: %d, want the consent page", resp.StatusCode)
	}
	sub := b.submit(form, nil)
	if sub.StatusCode != http.StatusSeeOther || !location(t, sub).Query().Has("code") {
		t.Fatalf("approval: %d", sub.StatusCode)
	}
	return form
}

// consentShown fails t unless resp is our consent page: no redirect, no
// code.
func consentShown(t *testing.T, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" || !strings.Contains(string(body), `name="csrf_token"`) {
		t.Fatalf("status %d, Location %q; want the consent page", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// consentSkipped fails t unless resp redirects a code to the client.
func consentSkipped(t *testing.T, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusFound || !location(t, resp).Query().Has("code") {
		t.Fatalf("status %d; want a code without the consent page", resp.StatusCode)
	}
}

// TestRememberedConsent: after one approval with RememberConsent, the page
// is skipped only for a top-level navigation from this server's own site
// in a browser that approved the same client and redirect URI. A request
// another site sent the browser on (GHSA-6x8h-498w-gv8c: a malicious
// authorization server with a shared client_id and its own PKCE
// challenge), one the browser reports as the user's own ("none", which is
// also what a redirect after an app opened the browser reports), one
// without fetch metadata, and one from a new browser all get the page.
func TestRememberedConsent(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, func(c *Config) { c.RememberConsent = true })
	victim := newBrowser(t, h)
	req := func(client, redirect string) url.Values {
		q, _ := authParams(client, redirect) // a fresh challenge: the attacker's
		q.Set("scope", "mcp:read")
		q.Set("resource", testResource)
		return q
	}
	approveIn(t, victim, req(publicID, publicCB))
	approveIn(t, victim, req(webID, webCB))
	other := newBrowser(t, h) // approved another client only
	approveIn(t, other, req(basicID, publicCB))
	forged := newBrowser(t, h)
	jarURL, _ := url.Parse(h.issuer)
	forged.client.Jar.SetCookies(jarURL, []*http.Cookie{{Name: "mcpauth-remember", Value: strings.Repeat("A", 43)}})

	with := func(site string, extra map[string]string) map[string]string {
		hdr := fetchSite(site)
		for k, v := range extra {
			hdr[k] = v
		}
		return hdr
	}
	tests := []struct {
		name     string
		b        *browser
		q        url.Values
		hdr      map[string]string
		remember bool
	}{
		{"same-origin navigation in the approving browser", victim, req(publicID, publicCB), fetchSite("same-origin"), true},
		{"same-site navigation in the approving browser", victim, req(publicID, publicCB), fetchSite("same-site"), true},
		{"cross-site navigation", victim, req(publicID, publicCB), fetchSite("cross-site"), false},
		{"navigation the browser calls the user's own (none)", victim, req(publicID, publicCB), fetchSite("none"), false},
		{"no fetch metadata", victim, req(publicID, publicCB), nil, false},
		{"not a navigation", victim, req(publicID, publicCB), with("same-origin", map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}), false},
		{"navigation of a frame", victim, req(publicID, publicCB), with("same-origin", map[string]string{"Sec-Fetch-Dest": "iframe"}), false},
		{"unknown Sec-Fetch-Site", victim, req(publicID, publicCB), with("Same-Origin", nil), false},
		{"another redirect URI of the approved client", victim, req(webID, "https://app.example.com/other"), fetchSite("same-origin"), false},
		{"same client and redirect URI, more scopes", victim, func() url.Values { q := req(publicID, publicCB); q.Set("scope", "mcp:read mcp:write"); return q }(), fetchSite("same-origin"), false},
		{"new browser, same-origin navigation", newBrowser(t, h), req(publicID, publicCB), fetchSite("same-origin"), false},
		{"new browser without fetch metadata", newBrowser(t, h), req(publicID, publicCB), nil, false},
		{"browser that approved another client", other, req(publicID, publicCB), fetchSite("same-origin"), false},
		{"made-up remember cookie", forged, req(publicID, publicCB), fetchSite("same-origin"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := tt.b.navigate(tt.q, tt.hdr)
			if tt.remember {
				consentSkipped(t, resp)
			} else {
				consentShown(t, resp)
			}
		})
	}
	t.Run("two Sec-Fetch-Site headers", func(t *testing.T) {
		r, _ := http.NewRequest(http.MethodGet, h.url("/authorize?"+req(publicID, publicCB).Encode()), nil)
		for k, v := range fetchSite("same-origin") {
			r.Header.Set(k, v)
		}
		r.Header.Add("Sec-Fetch-Site", "cross-site")
		resp, err := victim.client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		consentShown(t, resp)
	})
	t.Run("a client whose redirect URI is our own /authorize", func(t *testing.T) {
		// Deny (or approve) on its page would send the browser, from our
		// own origin, to our /authorize for the victim's client with the
		// attacker's challenge: a same-origin navigation in the approving
		// browser. Such a client gets an error page instead.
		target := h.url("/authorize?" + req(publicID, publicCB).Encode())
		info := h.register(t, `{"client_name":"Helpful","redirect_uris":["`+target+`"],"token_endpoint_auth_method":"none","application_type":"native"}`)
		q, _ := authParams(info.ClientID, target)
		resp := victim.navigate(q, fetchSite("none"))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("status %d, Location %q; want an error page", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("a second browser that approves is remembered as well", func(t *testing.T) {
		approveIn(t, other, req(publicID, publicCB))
		consentSkipped(t, other.navigate(req(publicID, publicCB), fetchSite("same-origin")))
		consentSkipped(t, victim.navigate(req(publicID, publicCB), fetchSite("same-origin")))
	})
}

// TestRememberCookie: the remember cookie is set by the approval, never by
// merely loading the page, with __Host-, Secure, HttpOnly, SameSite=Strict
// and the consent's lifetime on an https issuer.
func TestRememberCookie(t *testing.T) {
	t.Parallel()
	h := promptHarness(t, func(c *Config) { c.RememberConsent = true })
	b := newBrowser(t, h)
	q, _ := authParams(publicID, publicCB)
	resp, _, form := b.page(q)
	for _, c := range resp.Cookies() {
		if c.Name == "mcpauth-remember" {
			t.Fatal("loading the page set the remember cookie")
		}
	}
	form.Set("action", "approve")
	var got *http.Cookie
	for _, c := range b.submit(form, nil).Cookies() {
		if c.Name == "mcpauth-remember" {
			got = c
		}
	}
	if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Path != "/" || got.Domain != "" ||
		got.MaxAge != int(consentTTL.Seconds()) {
		t.Fatalf("remember cookie on http loopback: %+v", got)
	}

	s := mustNew(t, Config{Issuer: "https://as.example.com", Clients: testClients(), Scopes: []string{"mcp:read"}, RememberConsent: true})
	qw, _ := authParams(webID, webCB)
	page := serve(s, http.MethodGet, "https://as.example.com/authorize?"+qw.Encode())
	fields := url.Values{"action": {"approve"}}
	for _, m := range hiddenField.FindAllStringSubmatch(page.Body.String(), -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}
	post := httptest.NewRequest(http.MethodPost, "https://as.example.com/consent", strings.NewReader(fields.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", "https://as.example.com")
	post.Header.Set("Sec-Fetch-Site", "same-origin")
	for _, c := range page.Result().Cookies() {
		post.AddCookie(c)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, post)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("https approval: %d %s", w.Code, w.Body)
	}
	c := w.Result().Cookies()
	if len(c) != 1 || c[0].Name != "__Host-mcpauth-remember" || !c[0].Secure || !c[0].HttpOnly ||
		c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/" || c[0].Domain != "" {
		t.Fatalf("https remember cookie: %+v", c)
	}
}
