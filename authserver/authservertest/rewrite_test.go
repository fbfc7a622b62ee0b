package authservertest_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver/authservertest"
)

// TestRewriteAuthorizationResponse: only redirects carrying iss are
// authorization responses; other answers pass through untouched.
func TestRewriteAuthorizationResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, location string
		status         int
		want           string
	}{
		{"authorization response", "http://127.0.0.1/cb?code=c&iss=https%3A%2F%2Fas&state=s", http.StatusFound,
			"http://127.0.0.1/cb?code=c&iss=https%3A%2F%2Fevil&state=s"},
		{"error response after consent", "http://127.0.0.1/cb?error=access_denied&iss=https%3A%2F%2Fas", http.StatusSeeOther,
			"http://127.0.0.1/cb?error=access_denied&iss=https%3A%2F%2Fevil"},
		{"redirect to an upstream provider", "https://idp.example.com/authorize?client_id=x&state=s", http.StatusFound,
			"https://idp.example.com/authorize?client_id=x&state=s"},
		{"not a redirect", "http://127.0.0.1/cb?iss=https%3A%2F%2Fas", http.StatusOK,
			"http://127.0.0.1/cb?iss=https%3A%2F%2Fas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", tt.location)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte("body"))
			})
			h := authservertest.RewriteAuthorizationResponse(next, func(q url.Values) { q.Set("iss", "https://evil") })
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/authorize", nil))
			if rec.Code != tt.status || rec.Header().Get("Location") != tt.want || rec.Body.String() != "body" {
				t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Location"), rec.Body)
			}
		})
	}
}

// TestRewriteMetadata: documents at both well-known forms are edited,
// other paths, errors and non-objects pass through, oversized ones are
// refused.
func TestRewriteMetadata(t *testing.T) {
	t.Parallel()
	doc := `{"issuer":"https://as","n":12345678901234567890}`
	tests := []struct {
		name, path, body string
		status           int
		want             string
		wantStatus       int
	}{
		{"RFC 8414", "/.well-known/oauth-authorization-server/t", doc, http.StatusOK, `{"edited":true,"issuer":"https://as","n":12345678901234567890}`, http.StatusOK},
		{"OpenID appended", "/t/.well-known/openid-configuration", doc, http.StatusOK, `{"edited":true,"issuer":"https://as","n":12345678901234567890}`, http.StatusOK},
		{"other path", "/token", doc, http.StatusOK, doc, http.StatusOK},
		{"error", "/.well-known/oauth-authorization-server", doc, http.StatusNotFound, doc, http.StatusNotFound},
		{"not an object", "/.well-known/oauth-authorization-server", `["x"]`, http.StatusOK, `["x"]`, http.StatusOK},
		{"not JSON", "/.well-known/oauth-authorization-server", `<html>`, http.StatusOK, `<html>`, http.StatusOK},
		{"too large", "/.well-known/oauth-authorization-server", `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, http.StatusOK, "", http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "public, max-age=300")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			h := authservertest.RewriteMetadata(next, func(m map[string]any) { m["edited"] = true })
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.want == "" {
				return
			}
			if rec.Body.String() != tt.want || rec.Header().Get("Cache-Control") != "public, max-age=300" {
				t.Fatalf("%s %v", rec.Body, rec.Header())
			}
		})
	}
}
