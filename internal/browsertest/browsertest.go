// Package browsertest drives headless Chromium through the authorization
// server's pages in tests: a browser that reaches nothing but this machine,
// the client's callback on 127.0.0.1, screenshots, and one consent
// decision (open the page, press a button, read the authorization
// response).
package browsertest

import (
	"context"
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

// ChromiumPath is Debian's chromium; `make browser-deps` installs it.
const ChromiumPath = "/usr/bin/chromium"

// artifactsDir receives screenshots, below the test's package; it is
// git-ignored.
const artifactsDir = "testdata/artifacts"

// New starts headless Chromium with a fresh profile and flags that keep it
// from contacting anything but this machine: no background networking,
// component updates or sync, and every host name except the loopback
// literals resolves to nothing. Without chromium the test is skipped, and
// fails under CI (which must not skip it).
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("browser test: %s not found; make test installs it (browser-deps) and CI must not skip this test", ChromiumPath)
		}
		t.Skipf("browser test skipped: %s not found (install it with `make browser-deps`, which runs apt-get install chromium)", ChromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
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

// Callback is the client's redirect target on 127.0.0.1 (path /callback);
// it hands each authorization response to the test.
func Callback(t *testing.T) (*httptest.Server, chan url.Values) {
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

// Screenshot saves png as testdata/artifacts/name below the test's package.
func Screenshot(t *testing.T, name string, png []byte) {
	t.Helper()
	if err := os.MkdirAll(artifactsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactsDir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// Flow is one consent decision made in the browser.
type Flow struct {
	Ctx context.Context
	// Issuer is the "iss" every authorization response must carry.
	Issuer string
	// CallbackURL is the client's redirect URI, served by [Callback].
	CallbackURL string
	// Got receives the authorization responses of [Callback].
	Got chan url.Values
}

// LoadConsent opens authorizeURL, waits for the consent page, saves a
// screenshot as shot and checks that the page names the client wantClient
// and the callback's host.
func (b *Flow) LoadConsent(t *testing.T, authorizeURL, shot, wantClient string) {
	t.Helper()
	err := chromedp.Do(b.Ctx,
		chromedp.Navigate(authorizeURL),
		chromedp.WaitVisible(chromedp.ID("approve")),
	)
	if err != nil {
		t.Fatalf("loading the consent page: %v", err)
	}
	name, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.ID("client-name")))
	if err != nil {
		t.Fatal(err)
	}
	redirectHost, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.ID("redirect-host")))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	Screenshot(t, shot, png)
	cbHost, _, _ := strings.Cut(strings.TrimPrefix(b.CallbackURL, "http://"), "/")
	if name != wantClient || !strings.Contains(redirectHost, cbHost) {
		t.Fatalf("page shows client %q, redirect %q", name, redirectHost)
	}
}

// Click presses a button and returns the authorization response the
// client's callback received, after checking its state (that of q) and
// issuer, and that the browser shows the callback's page.
func (b *Flow) Click(t *testing.T, button string, q url.Values) url.Values {
	t.Helper()
	if err := chromedp.Do(b.Ctx, chromedp.Click(chromedp.ID(button))); err != nil {
		t.Fatalf("clicking %s: %v", button, err)
	}
	select {
	case resp := <-b.Got:
		if resp.Get("state") != q.Get("state") || resp.Get("iss") != b.Issuer {
			t.Fatalf("state/iss: %v", resp)
		}
		text, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.ID("done")))
		if err != nil || !strings.Contains(text, "Signed in") {
			t.Fatalf("callback page: %q %v", text, err)
		}
		return resp
	case <-time.After(20 * time.Second):
		loc, _ := chromedp.Run(b.Ctx, chromedp.Location())
		body, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		t.Fatalf("the browser never reached the callback; it is at %s showing %q", loc, body)
		return nil
	}
}
