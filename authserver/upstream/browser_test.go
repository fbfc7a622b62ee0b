package upstream

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpauth/mcpauth/internal/browsertest"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
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

// TestUpstreamConsentInBrowser runs the upstream login in headless
// Chromium, with the provider on another site (localhost, while this
// server is 127.0.0.1): our consent page must let its form's redirect go
// to the provider (CSP form-action), and the browser-binding cookie must
// come back on the provider's cross-site redirect to our callback
// (SameSite=Lax), or the login would fail in every real browser.
func TestUpstreamConsentInBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	cb, got := browsertest.Callback(t)
	h, p := upstreamHarness(t, func(c *testConfig) {
		c.Upstream.Issuer = strings.Replace(c.Upstream.Issuer, "127.0.0.1", "localhost", 1)
		nethook.Set(&c.Upstream.Fetch, nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr("127.0.0.1"))})
	})
	p.set(func(p *fakeProvider) {
		p.issuer = strings.Replace(p.issuer, "127.0.0.1", "localhost", 1)
		p.page = true
	})
	b := newBrowserFlow(ctx, h, cb.URL+"/callback", got)
	q, verifier := b.loadConsent(t, "consent-upstream.png")
	next, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("upstream-next")))
	if err != nil || !strings.Contains(next, "localhost:") {
		t.Fatalf("the page does not name the provider: %q %v", next, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("approve")), chromedp.WaitVisible(chromedp.ID("signin"))); err != nil {
		t.Fatalf("approving and reaching the provider: %v", err)
	}
	resp := b.Click(t, "signin", q)
	if resp.Get("code") == "" {
		t.Fatalf("callback %v", resp)
	}
	if res := h.exchange(resp.Get("code"), verifier, b.CallbackURL, nil); res.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
}
