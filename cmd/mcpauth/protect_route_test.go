package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestEndpointFirst: every request gets the answer the mux alone gives it,
// and only a request for the endpoint's own path, spelled as the resource
// URL spells it, takes the shortcut; a resource path ServeMux would clean
// turns the shortcut off.
func TestEndpointFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resource, pattern, method, target string
		shortcut                          bool
	}{
		{"https://mcp.example/mcp", "/mcp", http.MethodPost, "/mcp", true},
		{"https://mcp.example/mcp", "/mcp", http.MethodGet, "/mcp?x=1", true},
		{"https://mcp.example/mcp", "/mcp", http.MethodPost, "/mcp/", false},
		{"https://mcp.example/mcp", "/mcp", http.MethodPost, "/m%63p", false},
		{"https://mcp.example/mcp", "/mcp", http.MethodPost, "/x/../mcp", false},
		{"https://mcp.example/mcp", "/mcp", http.MethodPost, "//mcp", false},
		{"https://mcp.example/mcp", "/mcp", http.MethodConnect, "/mcp", false},
		{"https://mcp.example/mcp", "/mcp", http.MethodGet, "/.well-known/oauth-protected-resource/mcp", false},
		{"https://mcp.example/mcp/", "/mcp/{$}", http.MethodPost, "/mcp/", true},
		{"https://mcp.example/mcp/", "/mcp/{$}", http.MethodPost, "/mcp", false},
		{"https://mcp.example", "/{$}", http.MethodPost, "/", true},
		{"https://mcp.example/a/../mcp", "/a/../mcp", http.MethodPost, "/a/../mcp", false},
	} {
		// answer is what a client sees: the handler reached, the status
		// and a redirect's target.
		answer := func(h http.Handler) string {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "http://mcp.example"+tc.target, nil))
			return rec.Header().Get("X-Reached") + " " + strconv.Itoa(rec.Code) + " " + rec.Header().Get("Location")
		}
		newMux := func(endpoint http.Handler) *http.ServeMux {
			mux := http.NewServeMux()
			mux.Handle(tc.pattern, endpoint)
			mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Reached", "metadata")
			})
			return mux
		}
		endpoint := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Reached", "endpoint") })
		want := answer(newMux(endpoint))
		shortcutTaken := false
		shortcut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			shortcutTaken = true
			endpoint.ServeHTTP(w, r)
		})
		got := answer(endpointFirst(tc.resource, shortcut, newMux(endpoint)))
		if got != want || shortcutTaken != tc.shortcut {
			t.Errorf("%s %s (resource %s): answer %q shortcut %v, want %q shortcut %v", tc.method, tc.target, tc.resource, got, shortcutTaken, want, tc.shortcut)
		}
	}
}
