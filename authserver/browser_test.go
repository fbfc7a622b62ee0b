package authserver

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpauth/mcpauth/internal/browsertest"
)

// browserFlow is one consent decision made in the browser for the
// harness's public client.
type browserFlow struct {
	browsertest.Flow
	h *harness
}

func newBrowserFlow(ctx context.Context, h *harness, callbackURL string, got chan url.Values) *browserFlow {
	return &browserFlow{Flow: browsertest.Flow{Ctx: ctx, Issuer: h.issuer, CallbackURL: callbackURL, Got: got}, h: h}
}

// loadConsent opens the consent page for a fresh request, checks what it
// shows and saves a screenshot.
func (b *browserFlow) loadConsent(t *testing.T, shot string) (url.Values, string) {
	t.Helper()
	q, verifier := authParams(publicID, b.CallbackURL)
	q.Set("scope", "mcp:read mcp:write")
	q.Set("resource", testResource)
	b.LoadConsent(t, b.h.url("/authorize?"+q.Encode()), shot, "Public App")
	return q, verifier
}

// TestConsentInBrowser covers requirements AS-13 and AS-14 in a real
// browser: headless Chromium loads the consent page, which must render
// without inline script, approve and deny must each land on the client's
// callback (303 through the page's CSP form-action), and the page must fit
// a phone screen.
func TestConsentInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	cb, got := browsertest.Callback(t)
	h := promptHarness(t, nil)
	b := newBrowserFlow(ctx, h, cb.URL+"/callback", got)

	t.Run("AS-14 approve", func(t *testing.T) {
		q, verifier := b.loadConsent(t, "consent-approve.png")
		resp := b.Click(t, "approve", q)
		if resp.Get("code") == "" || resp.Has("error") {
			t.Fatalf("approve: callback %v", resp)
		}
		if res := h.exchange(resp.Get("code"), verifier, b.CallbackURL, nil); res.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", res.status, res.body)
		}
	})
	t.Run("AS-14 deny", func(t *testing.T) {
		q, _ := b.loadConsent(t, "consent-deny.png")
		if resp := b.Click(t, "deny", q); resp.Get("error") != "access_denied" || resp.Has("code") {
			t.Fatalf("deny: callback %v", resp)
		}
	})
	t.Run("AS-14 readable on a phone", func(t *testing.T) {
		q, _ := authParams(publicID, b.CallbackURL)
		err := chromedp.Do(ctx,
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
			chromedp.Navigate(h.url("/authorize?"+q.Encode())),
			chromedp.WaitVisible(chromedp.ID("approve")),
		)
		if err != nil {
			t.Fatal(err)
		}
		fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= window.innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		browsertest.Screenshot(t, "consent-phone.png", png)
		if !fits {
			t.Fatal("the consent page scrolls sideways on a 390 px wide screen")
		}
	})
}

// TestRememberedConsentInBrowser runs the attack of GHSA-6x8h-498w-gv8c
// in headless Chromium. The user approved the client once, in this
// browser, with RememberConsent on; then a malicious authorization server
// sends the browser to our /authorize with the same client_id and redirect
// URI and a PKCE challenge of its own: from a page of its site (another
// site: localhost, while this server is 127.0.0.1), or, as when the MCP
// client opens the browser at the malicious server's authorization
// endpoint, by redirecting a navigation the browser started itself. Both
// get the consent page, and so does a URL opened directly. The browser
// reports the redirect case as the user's own navigation (Sec-Fetch-Site
// none) and sends SameSite=Strict cookies with it, which is why neither
// "none" nor a cookie alone may skip the page. A link on a page of our
// own site (the client's web page on 127.0.0.1) skips it, but not in a new
// browser.
func TestRememberedConsentInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	cb, got := browsertest.Callback(t)
	h := promptHarness(t, func(c *Config) { c.RememberConsent = true })
	b := newBrowserFlow(ctx, h, cb.URL+"/callback", got)
	// Pages that send the browser on to ?to=: a link (/link) and a
	// redirect (/go); /set and /probe show what the browser sends.
	probed := make(chan string, 1)
	sender := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		switch r.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: "strict", Value: "1", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			_, _ = w.Write([]byte(`<!doctype html><title>set</title><p id=done>set</p>`))
		case "/probe":
			_, err := r.Cookie("strict")
			probed <- r.Header.Get("Sec-Fetch-Site") + fmt.Sprintf(" strict-cookie=%t", err == nil)
			_, _ = w.Write([]byte(`<!doctype html><title>probe</title><p id=done>probe</p>`))
		case "/go":
			http.Redirect(w, r, to, http.StatusFound)
		case "/link":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><title>link</title><a id=l href="` + html.EscapeString(to) + `">continue</a>`))
		default:
			http.NotFound(w, r)
		}
	})
	app := httptest.NewServer(sender) // the client's web page, on our site
	t.Cleanup(app.Close)
	evil := httptest.NewServer(sender) // the malicious server, on another site
	t.Cleanup(evil.Close)
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)

	first, _ := b.loadConsent(t, "consent-remember.png")
	if resp := b.Click(t, "approve", first); resp.Get("code") == "" {
		t.Fatalf("first approval: callback %v", resp)
	}
	// attackURL is an authorization request like the approved one, with a
	// challenge of the attacker's.
	attackURL := func() string {
		q, _ := authParams(publicID, b.CallbackURL)
		q.Set("scope", first.Get("scope"))
		q.Set("resource", first.Get("resource"))
		return h.url("/authorize?" + q.Encode())
	}
	// outcome runs the steps and reports whether the browser ended on our
	// consent page ("page") or at the client's callback with a code.
	outcome := func(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		if err := chromedp.Do(ctx, append(steps, chromedp.WaitVisible(chromedp.CSS("#approve, #done")))...); err != nil {
			t.Fatal(err)
		}
		select {
		case resp := <-got:
			if resp.Get("code") == "" {
				t.Fatalf("callback without a code: %v", resp)
			}
			return "code"
		default:
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			if !strings.HasPrefix(loc, h.issuer+"/authorize?") {
				t.Fatalf("ended at %s", loc)
			}
			return "page"
		}
	}
	newBrowser := func(t *testing.T) context.Context {
		nctx, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return nctx
	}
	tests := []struct {
		name  string
		ctx   func(t *testing.T) context.Context
		steps func(target string) []chromedp.Action[chromedp.Void]
		want  string
	}{
		{"link on the attacker's site", nil, func(target string) []chromedp.Action[chromedp.Void] {
			return []chromedp.Action[chromedp.Void]{chromedp.Navigate(evilURL + "/link?to=" + url.QueryEscape(target)), chromedp.Click(chromedp.ID("l"))}
		}, "page"},
		{"the attacker's redirect of a navigation the browser started", nil, func(target string) []chromedp.Action[chromedp.Void] {
			return []chromedp.Action[chromedp.Void]{chromedp.Navigate(evilURL + "/go?to=" + url.QueryEscape(target))}
		}, "page"},
		{"URL opened directly", nil, func(target string) []chromedp.Action[chromedp.Void] {
			return []chromedp.Action[chromedp.Void]{chromedp.Navigate(target)}
		}, "page"},
		{"link on our own site", nil, func(target string) []chromedp.Action[chromedp.Void] {
			return []chromedp.Action[chromedp.Void]{chromedp.Navigate(app.URL + "/link?to=" + url.QueryEscape(target)), chromedp.Click(chromedp.ID("l"))}
		}, "code"},
		{"link on our own site in a new browser", newBrowser, func(target string) []chromedp.Action[chromedp.Void] {
			return []chromedp.Action[chromedp.Void]{chromedp.Navigate(app.URL + "/link?to=" + url.QueryEscape(target)), chromedp.Click(chromedp.ID("l"))}
		}, "page"},
	}
	// The premise: Chromium reports a navigation it started itself as
	// "none", with SameSite=Strict cookies, even after another site
	// redirected it.
	t.Run("what the browser sends after the attacker's redirect", func(t *testing.T) {
		err := chromedp.Do(ctx, chromedp.Navigate(app.URL+"/set"), chromedp.WaitVisible(chromedp.ID("done")),
			chromedp.Navigate(evilURL+"/go?to="+url.QueryEscape(app.URL+"/probe")), chromedp.WaitVisible(chromedp.ID("done")))
		if err != nil {
			t.Fatal(err)
		}
		if p := <-probed; p != "none strict-cookie=true" {
			// Safer than before, but the reasoning before rememberCookie
			// in consent.go, and the README, describe this and need updating.
			t.Errorf("after the attacker's redirect Chromium sent Sec-Fetch-Site %s, not none with the SameSite=Strict cookie", p)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ctx
			if tt.ctx != nil {
				c = tt.ctx(t)
			}
			if got := outcome(t, c, tt.steps(attackURL())...); got != tt.want {
				t.Fatalf("got the %s, want the %s", got, tt.want)
			}
		})
	}
}
