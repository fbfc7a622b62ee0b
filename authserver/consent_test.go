package authserver

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
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
		if resp := h.authorize(q2); resp.StatusCode != http.StatusFound || !location(t, resp).Query().Has("code") {
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
	h.clock.Advance(pendingTTL)
	if resp := b.submit(form, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
