package authserver

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium; CI installs it with `make browser-deps`.
const chromiumPath = "/usr/bin/chromium"

// artifactsDir receives screenshots; it is git-ignored.
const artifactsDir = "testdata/artifacts"

// newBrowserContext starts headless Chromium with a fresh profile and
// flags that keep it from contacting anything but this machine: no
// background networking, component updates or sync, and every host name
// except the loopback literals resolves to nothing.
func newBrowserContext(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("AS-14 browser test: %s not found; make test installs it (browser-deps) and CI must not skip this test", chromiumPath)
		}
		t.Skipf("AS-14 browser test skipped: %s not found (install it with `make browser-deps`, which runs apt-get install chromium)", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.WindowSize(1000, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// callbackServer is the client's redirect target on 127.0.0.1; it hands
// each authorization response to the test.
func callbackServer(t *testing.T) (*httptest.Server, chan url.Values) {
	got := make(chan url.Values, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		got <- r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>done</title><p id=done>Signed in. You can close this window.</p>"))
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func screenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if err := os.MkdirAll(artifactsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactsDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: authserver/%s", path)
}

// browserFlow is one consent decision made in the browser.
type browserFlow struct {
	ctx         context.Context
	h           *harness
	callbackURL string
	got         chan url.Values
}

// loadConsent opens the consent page for a fresh request, checks what it
// shows and saves a screenshot.
func (b *browserFlow) loadConsent(t *testing.T, shot string) (url.Values, string) {
	t.Helper()
	q, verifier := authParams(publicID, b.callbackURL)
	q.Set("scope", "mcp:read mcp:write")
	q.Set("resource", testResource)
	err := chromedp.Do(b.ctx,
		chromedp.Navigate(b.h.url("/authorize?"+q.Encode())),
		chromedp.WaitVisible(chromedp.ID("approve")),
	)
	if err != nil {
		t.Fatalf("loading the consent page: %v", err)
	}
	name, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("client-name")))
	if err != nil {
		t.Fatal(err)
	}
	redirectHost, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("redirect-host")))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, shot, png)
	cbHost, _, _ := strings.Cut(strings.TrimPrefix(b.callbackURL, "http://"), "/")
	if name != "Public App" || !strings.Contains(redirectHost, cbHost) {
		t.Fatalf("page shows client %q, redirect %q", name, redirectHost)
	}
	return q, verifier
}

// click presses a button and returns the authorization response the
// client's callback received.
func (b *browserFlow) click(t *testing.T, button string, q url.Values) url.Values {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.ID(button))); err != nil {
		t.Fatalf("clicking %s: %v", button, err)
	}
	select {
	case resp := <-b.got:
		if resp.Get("state") != q.Get("state") || resp.Get("iss") != b.h.issuer {
			t.Fatalf("state/iss: %v", resp)
		}
		text, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.ID("done")))
		if err != nil || !strings.Contains(text, "Signed in") {
			t.Fatalf("callback page: %q %v", text, err)
		}
		return resp
	case <-time.After(20 * time.Second):
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("the browser never reached the callback; it is at %s showing %q", loc, body)
		return nil
	}
}

// TestConsentInBrowser covers requirements AS-13 and AS-14 in a real
// browser: headless Chromium loads the consent page, which must render
// without inline script, approve and deny must each land on the client's
// callback (303 through the page's CSP form-action), and the page must fit
// a phone screen.
func TestConsentInBrowser(t *testing.T) {
	ctx := newBrowserContext(t)
	cb, got := callbackServer(t)
	h := promptHarness(t, nil)
	b := &browserFlow{ctx: ctx, h: h, callbackURL: cb.URL + "/callback", got: got}

	t.Run("AS-14 approve", func(t *testing.T) {
		q, verifier := b.loadConsent(t, "consent-approve.png")
		resp := b.click(t, "approve", q)
		if resp.Get("code") == "" || resp.Has("error") {
			t.Fatalf("approve: callback %v", resp)
		}
		if res := h.exchange(resp.Get("code"), verifier, b.callbackURL, nil); res.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", res.status, res.body)
		}
	})
	t.Run("AS-14 deny", func(t *testing.T) {
		q, _ := b.loadConsent(t, "consent-deny.png")
		if resp := b.click(t, "deny", q); resp.Get("error") != "access_denied" || resp.Has("code") {
			t.Fatalf("deny: callback %v", resp)
		}
	})
	t.Run("AS-14 readable on a phone", func(t *testing.T) {
		q, _ := authParams(publicID, b.callbackURL)
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
		screenshot(t, "consent-phone.png", png)
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
	ctx := newBrowserContext(t)
	cb, got := callbackServer(t)
	h := promptHarness(t, func(c *Config) { c.RememberConsent = true })
	b := &browserFlow{ctx: ctx, h: h, callbackURL: cb.URL + "/callback", got: got}
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
	if resp := b.click(t, "approve", first); resp.Get("code") == "" {
		t.Fatalf("first approval: callback %v", resp)
	}
	// attackURL is an authorization request like the approved one, with a
	// challenge of the attacker's.
	attackURL := func() string {
		q, _ := authParams(publicID, b.callbackURL)
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
