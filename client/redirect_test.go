package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// headerLog records the credential headers of every request a server gets.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) record(r *http.Request) {
	h := http.Header{}
	for _, k := range []string{"Authorization", "Dpop", "Cookie"} {
		if v, ok := r.Header[k]; ok {
			h[k] = v
		}
	}
	h.Set("X-Path", r.URL.Path)
	h.Set("X-Method", r.Method)
	l.mu.Lock()
	l.seen = append(l.seen, h)
	l.mu.Unlock()
}

func (l *headerLog) landed() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []http.Header
	for _, h := range l.seen {
		if h.Get("X-Path") == "/landed" {
			out = append(out, h)
		}
	}
	return out
}

// TestCrossOriginRedirectDropsCredentials: a redirect to another origin
// (RFC 6454: scheme, host, port) is followed without Authorization, DPoP
// and Cookie, on every path the client offers for MCP requests; a
// same-origin redirect keeps Authorization and Cookie but never a DPoP
// proof made for the previous URL. Token and registration requests never
// follow a redirect at all.
func TestCrossOriginRedirectDropsCredentials(t *testing.T) {
	t.Parallel()
	log := &headerLog{}
	landing := func(w http.ResponseWriter, r *http.Request) {
		log.record(r)
		if r.URL.Path == "/landed" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.NotFound(w, r)
	}
	otherPort := httptest.NewServer(http.HandlerFunc(landing))
	defer otherPort.Close()
	otherScheme := httptest.NewTLSServer(http.HandlerFunc(landing))
	defer otherScheme.Close()
	var target string // where /start redirects, set per case
	var status int
	var mu sync.Mutex
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			log.record(r)
			mu.Lock()
			loc, code := target, status
			mu.Unlock()
			w.Header().Set("Location", loc)
			w.WriteHeader(code)
			return
		}
		landing(w, r)
	}))
	defer origin.Close()
	localhost := strings.Replace(origin.URL, "127.0.0.1", "localhost", 1)

	cases := []struct {
		name     string
		method   string
		status   int
		target   string
		crossing bool
	}{
		{"307 other port", http.MethodPost, http.StatusTemporaryRedirect, otherPort.URL, true},
		{"308 other port", http.MethodPost, http.StatusPermanentRedirect, otherPort.URL, true},
		{"307 other scheme", http.MethodGet, http.StatusTemporaryRedirect, otherScheme.URL, true},
		{"308 other scheme", http.MethodPost, http.StatusPermanentRedirect, otherScheme.URL, true},
		{"307 other host", http.MethodPost, http.StatusTemporaryRedirect, localhost, true},
		{"308 other host", http.MethodGet, http.StatusPermanentRedirect, localhost, true},
		{"302 after POST", http.MethodPost, http.StatusFound, otherPort.URL, true},
		{"307 same origin", http.MethodPost, http.StatusTemporaryRedirect, origin.URL, false},
	}

	c, err := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: otherScheme.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	defer base.CloseIdleConnections()
	h, err := c.OAuthHandler("http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := c.Transport("http://127.0.0.1:1/mcp", base)
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*http.Client{
		"OAuthHandler.HTTPClient": h.HTTPClient(base),
		"Transport":               {Transport: tr},
		"Transport.HTTPClient":    tr.HTTPClient(),
	}
	for name, hc := range clients {
		for _, tc := range cases {
			mu.Lock()
			target, status = tc.target+"/landed", tc.status
			mu.Unlock()
			before := len(log.landed())
			req, _ := http.NewRequestWithContext(context.Background(), tc.method, origin.URL+"/start", strings.NewReader(`{"jsonrpc":"2.0"}`))
			req.Header.Set("Authorization", "Bearer secret-token")
			req.Header.Set("DPoP", "proof-for-start")
			req.Header.Set("Cookie", "session=secret")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, tc.name, err)
			}
			resp.Body.Close()
			got := log.landed()[before:]
			if len(got) != 1 {
				t.Fatalf("%s %s: the redirect target saw %d requests", name, tc.name, len(got))
			}
			g := got[0]
			if tc.crossing {
				for _, k := range []string{"Authorization", "Dpop", "Cookie"} {
					if v := g.Get(k); v != "" {
						t.Errorf("%s %s: the other origin got %s: %q", name, tc.name, k, v)
					}
				}
			} else {
				if g.Get("Authorization") == "" || g.Get("Cookie") == "" {
					t.Errorf("%s %s: same-origin redirect lost Authorization or Cookie: %v", name, tc.name, g)
				}
				if g.Get("Dpop") != "" {
					t.Errorf("%s %s: a DPoP proof for /start was replayed to /landed", name, tc.name)
				}
			}
			if tc.status == http.StatusFound && g.Get("X-Method") != http.MethodGet {
				t.Errorf("%s: 302 after POST followed with %s", tc.name, g.Get("X-Method"))
			}
		}
	}

	// Token and registration requests (guardedClient) follow no redirect.
	for _, tc := range cases {
		mu.Lock()
		target, status = tc.target+"/landed", tc.status
		mu.Unlock()
		before := len(log.landed())
		req, _ := http.NewRequest(http.MethodPost, origin.URL+"/start", strings.NewReader("grant_type=authorization_code"))
		req.SetBasicAuth("client", "secret")
		resp, err := c.guardedClient(nil).Do(req)
		if err != nil {
			t.Fatalf("token request %s: %v", tc.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(log.landed()) != before {
			t.Errorf("token request %s: redirect followed (status %d)", tc.name, resp.StatusCode)
		}
	}
}
