package authserver

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// from returns a copy of h whose requests leave from the loopback address
// src, so the server sees another client IP (the server, its clock and its
// logs are shared).
func (h *harness) from(src string) *harness {
	h.t.Helper()
	d := oauthtest.SourceDialer(h.t, src)
	c := *h
	c.http = &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext},
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.t.Cleanup(c.http.CloseIdleConnections)
	return &c
}

// TestRateLimits: the per-IP, per-(address, client) and per-client buckets
// answer 429 with Retry-After, each counting what it should.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("per IP", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", func(c *Config) { c.RateLimit = RateLimit{PerIP: 1, PerClient: math.Inf(1), Burst: 2} })
		for i, want := range []int{400, 400, 429} {
			resp, _ := h.post(pathToken, url.Values{"grant_type": {"password"}, "client_id": {publicID}}, "", "")
			if resp.StatusCode != want {
				t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
			}
			if want == 429 && resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		}
		if resp, _ := h.postJSON(pathRegister, `{}`); resp.StatusCode != 429 {
			t.Fatalf("registration: %d", resp.StatusCode)
		}
		if resp, _ := h.from("127.0.0.2").postJSON(pathRegister, `{}`); resp.StatusCode != 400 {
			t.Fatalf("registration from another address: %d", resp.StatusCode)
		}
		h.clock.Advance(2 * time.Second)
		if resp, _ := h.postJSON(pathRegister, `{}`); resp.StatusCode != 400 {
			t.Fatalf("after refill: %d", resp.StatusCode)
		}
	})
	t.Run("per address and client", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", func(c *Config) { c.RateLimit = RateLimit{PerIP: math.Inf(1), PerClient: 1, Burst: 1} })
		other := h.from("127.0.0.2")
		form := url.Values{"grant_type": {"password"}}
		steps := []struct {
			name       string
			h          *harness
			user, pass string
			want       int
		}{
			{"wrong secret", h, basicID, "wrong", 401},
			{"same address and client, right secret", h, basicID, basicSecret, 429},
			{"same address, another client", h, postID, "", 401},
			{"another address, same client", other, basicID, basicSecret, 400},
		}
		for _, s := range steps {
			resp, body := s.h.post(pathToken, form, s.user, s.pass)
			if resp.StatusCode != s.want {
				t.Fatalf("%s: %d %s, want %d", s.name, resp.StatusCode, body, s.want)
			}
		}
		// Introspection and revocation share the bucket of the token
		// endpoint.
		for _, p := range []string{pathIntrospect, pathRevoke} {
			if resp, _ := h.post(p, url.Values{"token": {"x"}}, basicID, basicSecret); resp.StatusCode != 429 {
				t.Fatalf("%s after the token endpoint's failure: %d", p, resp.StatusCode)
			}
		}
		h.clock.Advance(time.Second)
		if resp, body := h.post(pathToken, form, basicID, basicSecret); resp.StatusCode != 400 {
			t.Fatalf("after refill: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("per authenticated client", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", func(c *Config) { c.RateLimit = RateLimit{PerIP: math.Inf(1), PerClient: 1, Burst: 1} })
		form := url.Values{"grant_type": {"password"}}
		// An authenticated confidential client spends its own bucket,
		// wherever its requests come from.
		if resp, body := h.from("127.0.0.2").post(pathToken, form, basicID, basicSecret); resp.StatusCode != 400 {
			t.Fatalf("first: %d %s", resp.StatusCode, body)
		}
		if resp, _ := h.from("127.0.0.3").post(pathToken, form, basicID, basicSecret); resp.StatusCode != 429 {
			t.Fatalf("authenticated again from another address: %d", resp.StatusCode)
		}
		// A wrong secret is judged, not throttled by the client's bucket.
		if resp, _ := h.from("127.0.0.4").post(pathToken, form, basicID, "wrong"); resp.StatusCode != 401 {
			t.Fatalf("wrong secret from a fresh address: %d", resp.StatusCode)
		}
		// A public client has no bucket of its own: every address gets
		// its own budget for it.
		for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
			resp, body := h.from(src).post(pathToken, url.Values{"grant_type": {"password"}, "client_id": {publicID}}, "", "")
			if resp.StatusCode != 400 {
				t.Fatalf("public client from %s: %d %s", src, resp.StatusCode, body)
			}
		}
	})
}

// TestNoLockoutByStrangers: junk requests from other addresses naming a
// client's client_id, at the token, introspection and revocation
// endpoints, until each of those addresses is throttled, do not stop the
// client itself: its code redemption, introspection and revocation
// succeed. Default limits.
func TestNoLockoutByStrangers(t *testing.T) {
	t.Parallel()
	strangers := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	for _, tc := range []struct {
		name       string
		clientID   string
		user, pass string // the client's own Basic credentials
	}{
		{"public client", publicID, "", ""},
		{"confidential client", basicID, basicID, basicSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", func(c *Config) { c.RateLimit = RateLimit{} })
			junk := []struct {
				path       string
				form       url.Values
				user, pass string
			}{
				{pathToken, url.Values{"grant_type": {"authorization_code"}, "code": {"junk"}, "code_verifier": {"junk"}, "client_id": {tc.clientID}}, "", ""},
				{pathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"junk"}}, tc.clientID, "wrong-secret"},
				{pathIntrospect, url.Values{"token": {"junk"}}, tc.clientID, "wrong-secret"},
				{pathRevoke, url.Values{"token": {"junk"}, "client_id": {tc.clientID}}, "", ""},
				{pathRevoke, url.Values{"token": {"junk"}}, tc.clientID, "wrong-secret"},
			}
			for _, src := range strangers {
				s := h.from(src)
				throttled := 0
				for i := range 40 {
					j := junk[i%len(junk)]
					if resp, _ := s.post(j.path, j.form, j.user, j.pass); resp.StatusCode == http.StatusTooManyRequests {
						throttled++
					}
				}
				if throttled == 0 {
					t.Fatalf("%s sent 40 junk requests and was never throttled: the flood proves nothing", src)
				}
			}

			q, v := authParams(tc.clientID, publicCB)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v},
				"redirect_uri": {publicCB}}
			if tc.user == "" {
				form.Set("client_id", tc.clientID)
			}
			res := h.token(form, tc.user, tc.pass)
			if res.status != http.StatusOK {
				t.Fatalf("the client's own code redemption after the flood: %d %s", res.status, res.body)
			}
			if tc.user != "" {
				resp, body := h.post(pathIntrospect, url.Values{"token": {res.tok.AccessToken}}, tc.user, tc.pass)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("the client's own introspection after the flood: %d %s", resp.StatusCode, body)
				}
			}
			rev := url.Values{"token": {res.tok.RefreshToken}}
			if tc.user == "" {
				rev.Set("client_id", tc.clientID)
			}
			if resp, body := h.post(pathRevoke, rev, tc.user, tc.pass); resp.StatusCode != http.StatusOK {
				t.Fatalf("the client's own revocation after the flood: %d %s", resp.StatusCode, body)
			}
			refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}}
			if tc.user == "" {
				refresh.Set("client_id", tc.clientID)
			}
			wantError(t, h.token(refresh, tc.user, tc.pass), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
		})
	}
}

// TestLimiterBounded: the table never holds more than its bound, whatever
// number of keys passes through it.
func TestLimiterBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, bound := range []int{1, 10, 1000} {
		ls := mustLimiterSet(t, 1, 1, bound)
		for i := range 5 * bound {
			ls.allow(fmt.Sprint("key", i), now)
			if n := ls.tracked(); n > bound {
				t.Fatalf("bound %d: %d entries after %d keys", bound, n, i+1)
			}
		}
		if n := ls.tracked(); n != bound {
			t.Fatalf("bound %d: %d entries at the end", bound, n)
		}
	}
}

// TestLimiterEvictsLeastRecentlyUsed: a full table forgets the key used
// longest ago, where a refused request counts as a use (a throttled
// client cannot get a fresh bucket by waiting for eviction while it keeps
// sending); a forgotten key starts again with a full bucket.
func TestLimiterEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ls := mustLimiterSet(t, 0.001, 1, 3) // one request per key, no refill within the test
	allow := func(key string, want bool) {
		t.Helper()
		if ok, _ := ls.allow(key, now); ok != want {
			t.Fatalf("allow(%s) = %v, want %v", key, ok, want)
		}
	}
	keys := func(want ...string) {
		t.Helper()
		if got := ls.entries.Keys(); !slices.Equal(got, want) {
			t.Fatalf("tracked keys (least recent first) %v, want %v", got, want)
		}
	}
	allow("a", true)
	allow("b", true)
	allow("c", true)
	allow("a", false) // refused, but used: now the most recent
	keys("b", "c", "a")
	allow("d", true) // evicts b
	keys("c", "a", "d")
	allow("a", false) // still throttled: not evicted
	allow("c", false)
	keys("d", "a", "c")
	allow("b", true) // forgotten, so a full bucket again; evicts d
	keys("a", "c", "b")
	allow("d", true)
	keys("c", "b", "d")
}

func mustLimiterSet(t testing.TB, perSecond float64, burst, maxTracked int) *limiterSet[string] {
	t.Helper()
	return newLimiterSet[string](perSecond, burst, maxTracked)
}

// TestBrowserRateLimit: a flood of authorization requests from one address
// is throttled with 429, Retry-After and the HTML error page (never a
// redirect), saves no more pending authorizations than its allowance, and
// leaves another address free to log in.
func TestBrowserRateLimit(t *testing.T) {
	t.Parallel()
	const burst = 5
	store := NewMemoryStore()
	h := promptHarness(t, func(c *Config) {
		c.Storage = Storage{Pending: store}
		c.RateLimit = RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: 1, BrowserBurst: burst}
	})
	flooder := h.from("127.0.0.2")
	q, _ := authParams(publicID, publicCB)
	for i := range 4 * burst {
		resp := flooder.authorize(q)
		want := http.StatusOK
		if i >= burst {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
		if want == http.StatusOK {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		hdr := resp.Header
		if hdr.Get("Retry-After") != "1" || hdr.Get("Location") != "" ||
			!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") ||
			!strings.Contains(hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			!strings.Contains(string(body), string(oauthmeta.CodeTemporarilyUnavailable)) {
			t.Fatalf("throttled answer: %v\n%s", hdr, body)
		}
	}
	// A request naming an unregistered client is refused the same way:
	// nothing of a throttled request is read, so it is never redirected.
	bad, _ := authParams("unknown-client", "https://attacker.example/cb")
	if resp := flooder.authorize(bad); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Location") != "" {
		t.Fatalf("throttled unknown client: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := flooder.post(pathConsent, url.Values{"request": {"x"}}, "", ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("consent form from the throttled address: %d", resp.StatusCode)
	}
	if n := store.pending.Len(); n != burst {
		t.Fatalf("pending authorizations after the flood = %d, want %d", n, burst)
	}

	// Another address logs in: consent page, approval, code.
	b := newBrowser(t, h)
	b.client.Transport = &http.Transport{DialContext: oauthtest.SourceDialer(t, "127.0.0.3").DialContext}
	t.Cleanup(b.client.CloseIdleConnections)
	q, v := authParams(publicID, publicCB)
	resp, _, form := b.page(q)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent page from another address: %d", resp.StatusCode)
	}
	form.Set("action", "approve")
	resp = b.submit(form, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approval from another address: %d", resp.StatusCode)
	}
	code := location(t, resp).Query().Get("code")
	if res := h.exchange(code, v, publicCB, nil); res.status != http.StatusOK {
		t.Fatalf("redeeming the code: %d %s", res.status, res.body)
	}

	// The flooder's bucket refills at PerIPBrowser.
	h.clock.Advance(time.Second)
	if resp := flooder.authorize(q); resp.StatusCode != http.StatusOK {
		t.Fatalf("after refill: %d", resp.StatusCode)
	}
	if resp := flooder.authorize(q); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after one refilled request: %d", resp.StatusCode)
	}
	if n := store.pending.Len(); n != burst+1 {
		t.Fatalf("pending authorizations = %d, want %d", n, burst+1)
	}
}
