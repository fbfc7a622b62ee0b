package safehttp

import (
	"net/http"
	"net/url"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/other?q", true},
		{"https://EXAMPLE.com/a", "HTTPS://example.COM:443/b", true},
		{"http://127.0.0.1/a", "http://127.0.0.1:80/b", true},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp", false},
		{"http://127.0.0.1:443/mcp", "https://127.0.0.1:443/mcp", false},
		{"https://127.0.0.1/mcp", "http://127.0.0.1/mcp", false},
		{"http://127.0.0.1:8080/mcp", "http://localhost:8080/mcp", false},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.2:8080/mcp", false},
		{"https://example.com/", "https://api.example.com/", false},
		{"http://[::1]:80/", "http://[::1]/", true},
		{"/relative", "/relative", false},
		// Host names compare by ASCII case only: U+017F folds to "s" and
		// the Kelvin sign U+212A to "k" under Unicode rules.
		{"https://aſ.example/", "https://as.example/", false},
		{"https://\u212Aey.example/", "https://key.example/", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.same {
			t.Errorf("SameOrigin(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestOnRedirect: first requests pass untouched; a redirected request
// loses its DPoP proof always and its Authorization and Cookie when it
// leaves the first request's origin, or when the chain back to the first
// request cannot be read; the request given is never modified.
func TestOnRedirect(t *testing.T) {
	t.Parallel()
	hop := func(first string, via ...string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, first, nil)
		for _, u := range via {
			next, _ := http.NewRequest(http.MethodGet, u, nil)
			next.Response = &http.Response{StatusCode: http.StatusTemporaryRedirect, Request: r}
			r = next
		}
		r.Header.Set("Authorization", "Bearer t")
		r.Header.Set("DPoP", "proof")
		r.Header.Set("Cookie", "s=1")
		return r
	}
	broken := hop("http://127.0.0.1:1/a", "http://127.0.0.1:1/b")
	broken.Response.Request = nil
	for _, tc := range []struct {
		name     string
		req      *http.Request
		keep     []string
		stripped []string
	}{
		{"first request", hop("http://127.0.0.1:1/a"), []string{"Authorization", "Dpop", "Cookie"}, nil},
		{"same origin", hop("http://127.0.0.1:1/a", "http://127.0.0.1:1/b"), []string{"Authorization", "Cookie"}, []string{"Dpop"}},
		{"other port", hop("http://127.0.0.1:1/a", "http://127.0.0.1:2/a"), nil, []string{"Authorization", "Dpop", "Cookie"}},
		{"away and back", hop("http://127.0.0.1:1/a", "http://127.0.0.1:2/a", "http://127.0.0.1:1/b"), []string{"Authorization", "Cookie"}, []string{"Dpop"}},
		{"other origin on the second hop", hop("http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "https://127.0.0.1:1/c"), nil, []string{"Authorization", "Dpop", "Cookie"}},
		{"broken chain", broken, nil, []string{"Authorization", "Dpop", "Cookie"}},
	} {
		out := OnRedirect(tc.req)
		for _, h := range tc.keep {
			if out.Header.Get(h) == "" {
				t.Errorf("%s: %s removed", tc.name, h)
			}
		}
		for _, h := range tc.stripped {
			if out.Header.Get(h) != "" {
				t.Errorf("%s: %s kept", tc.name, h)
			}
			if tc.req.Header.Get(h) == "" {
				t.Errorf("%s: the given request was modified", tc.name)
			}
		}
	}
}
