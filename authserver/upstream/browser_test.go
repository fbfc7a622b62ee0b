package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// The upstream login in a real browser. The helpers are those of the
// authserver package's browser tests.

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
	t.Logf("screenshot: authserver/upstream/%s", path)
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

// TestUpstreamConsentInBrowser runs the upstream login in headless
// Chromium, with the provider on another site (localhost, while this
// server is 127.0.0.1): our consent page must let its form's redirect go
// to the provider (CSP form-action), and the browser-binding cookie must
// come back on the provider's cross-site redirect to our callback
// (SameSite=Lax), or the login would fail in every real browser.
func TestUpstreamConsentInBrowser(t *testing.T) {
	ctx := newBrowserContext(t)
	cb, got := callbackServer(t)
	h, p := upstreamHarness(t, func(c *testConfig) {
		c.Upstream.Issuer = strings.Replace(c.Upstream.Issuer, "127.0.0.1", "localhost", 1)
		nethook.Set(&c.Upstream.Fetch, nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr("127.0.0.1"))})
	})
	p.set(func(p *fakeProvider) {
		p.issuer = strings.Replace(p.issuer, "127.0.0.1", "localhost", 1)
		p.page = true
	})
	b := &browserFlow{ctx: ctx, h: h, callbackURL: cb.URL + "/callback", got: got}
	q, verifier := b.loadConsent(t, "consent-upstream.png")
	next, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("upstream-next")))
	if err != nil || !strings.Contains(next, "localhost:") {
		t.Fatalf("the page does not name the provider: %q %v", next, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("approve")), chromedp.WaitVisible(chromedp.ID("signin"))); err != nil {
		t.Fatalf("approving and reaching the provider: %v", err)
	}
	resp := b.click(t, "signin", q)
	if resp.Get("code") == "" {
		t.Fatalf("callback %v", resp)
	}
	if res := h.exchange(resp.Get("code"), verifier, b.callbackURL, nil); res.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
}
