package authserver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestAuthorizeErrorRedirects covers requirements AS-01, AS-04, AS-06 and
// AS-08 on the authorization endpoint: each bad parameter is redirected
// back with the right error, the state and iss.
func TestAuthorizeErrorRedirects(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.Resources = []string{testResource, "https://other.example.com/mcp"} })
	tests := []struct {
		name   string
		mutate func(q url.Values)
		want   oauthmeta.ErrorCode
	}{
		{"AS-01 implicit response_type=token", func(q url.Values) { q.Set("response_type", "token") }, oauthmeta.CodeUnsupportedResponseType},
		{"AS-01 hybrid response_type", func(q url.Values) { q.Set("response_type", "code id_token") }, oauthmeta.CodeUnsupportedResponseType},
		{"AS-01 missing response_type", func(q url.Values) { q.Del("response_type") }, oauthmeta.CodeInvalidRequest},
		{"AS-04 missing code_challenge", func(q url.Values) { q.Del("code_challenge") }, oauthmeta.CodeInvalidRequest},
		{"AS-04 plain method", func(q url.Values) { q.Set("code_challenge_method", "plain") }, oauthmeta.CodeInvalidRequest},
		{"AS-04 missing method means plain", func(q url.Values) { q.Del("code_challenge_method") }, oauthmeta.CodeInvalidRequest},
		{"AS-04 malformed challenge", func(q url.Values) { q.Set("code_challenge", "short") }, oauthmeta.CodeInvalidRequest},
		{"AS-08 resource with fragment", func(q url.Values) { q.Set("resource", testResource+"#x") }, oauthmeta.CodeInvalidTarget},
		{"AS-08 relative resource", func(q url.Values) { q.Set("resource", "/mcp") }, oauthmeta.CodeInvalidTarget},
		{"AS-08 resource not served", func(q url.Values) { q.Set("resource", "https://evil.example.com/mcp") }, oauthmeta.CodeInvalidTarget},
		{"AS-08 one bad resource among good", func(q url.Values) { q["resource"] = []string{testResource, "urn:x"} }, oauthmeta.CodeInvalidTarget},
		{"unknown scope", func(q url.Values) { q.Set("scope", "mcp:read files:delete") }, oauthmeta.CodeInvalidScope},
		{"offline_access not advertised", func(q url.Values) { q.Set("scope", "offline_access") }, oauthmeta.CodeInvalidScope},
		{"repeated state", func(q url.Values) { q.Add("state", "other") }, oauthmeta.CodeInvalidRequest},
		{"repeated scope", func(q url.Values) { q["scope"] = []string{"mcp:read", "mcp:write"} }, oauthmeta.CodeInvalidRequest},
		{"response_mode fragment", func(q url.Values) { q.Set("response_mode", "fragment") }, oauthmeta.CodeInvalidRequest},
		{"request object", func(q url.Values) { q.Set("request", "eyJ.x.y") }, "request_not_supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := authParams(publicID, publicCB)
			tt.mutate(q)
			resp := h.authorize(q)
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("status %d, want 302", resp.StatusCode)
			}
			loc := location(t, resp)
			got := loc.Query()
			if loc.Scheme+"://"+loc.Host+loc.Path != publicCB {
				t.Fatalf("redirected to %s", loc)
			}
			if got.Get("error") != string(tt.want) {
				t.Fatalf("error = %q (%s), want %q", got.Get("error"), got.Get("error_description"), tt.want)
			}
			if got.Get("iss") != h.issuer {
				t.Fatalf("AS-06: iss = %q, want %q", got.Get("iss"), h.issuer)
			}
			if got.Get("state") != q.Get("state") {
				t.Fatalf("AS-07: state = %q, want %q", got.Get("state"), q.Get("state"))
			}
			if got.Has("code") {
				t.Fatal("error response carries a code")
			}
		})
	}
}

// TestAuthorizeNoRedirect covers requirements AS-05 and CIMD-07: when the
// client or the redirect URI cannot be trusted the answer is an HTML page,
// never a redirect.
func TestAuthorizeNoRedirect(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tests := []struct {
		name   string
		mutate func(q url.Values)
		status int
		code   string
	}{
		{"AS-05 unregistered redirect_uri", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, 400, "invalid_request"},
		{"AS-05 extra query on redirect_uri", func(q url.Values) { q.Set("redirect_uri", publicCB+"?x=1") }, 400, "invalid_request"},
		{"AS-05 different path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1/callback2") }, 400, "invalid_request"},
		{"AS-05 trailing slash", func(q url.Values) { q.Set("redirect_uri", publicCB+"/") }, 400, "invalid_request"},
		{"AS-05 https instead of http", func(q url.Values) { q.Set("redirect_uri", "https://127.0.0.1/callback") }, 400, "invalid_request"},
		{"AS-05 localhost for 127.0.0.1", func(q url.Values) { q.Set("redirect_uri", "http://localhost/callback") }, 400, "invalid_request"},
		{"AS-05 fragment", func(q url.Values) { q.Set("redirect_uri", publicCB+"#f") }, 400, "invalid_request"},
		{"AS-05 repeated redirect_uri", func(q url.Values) { q.Add("redirect_uri", publicCB) }, 400, "invalid_request"},
		{"AS-05 unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, 400, "invalid_client"},
		{"AS-05 missing client_id", func(q url.Values) { q.Del("client_id") }, 400, "invalid_request"},
		{"AS-05 repeated client_id", func(q url.Values) { q.Add("client_id", basicID) }, 400, "invalid_request"},
		{"CIMD-01 http client_id URL", func(q url.Values) { q.Set("client_id", "http://client.example.com/c.json") }, 400, "invalid_client"},
		// A registered loopback redirect URI on this server's own port:
		// the response would be a navigation from our origin to whatever
		// the client chose, such as our /authorize (see TestRememberedConsent).
		{"redirect_uri at this server's origin", func(q url.Values) { q.Set("redirect_uri", h.url("/callback")) }, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := authParams(publicID, publicCB)
			tt.mutate(q)
			resp := h.authorize(q)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q; want %d and no redirect", resp.StatusCode, resp.Header.Get("Location"), tt.status)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), tt.code) {
				t.Fatalf("want an HTML page naming %s, got %s", tt.code, body)
			}
			if strings.Contains(string(body), "evil.example") {
				t.Fatal("error page echoes the untrusted redirect URI")
			}
			if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Fatalf("error page headers: %v", resp.Header)
			}
		})
	}
}

// TestRedirectURIMatching covers requirement AS-05 (and CIMD-08, which uses
// the same matcher): exact match, with only loopback IP literals free to
// change the port.
func TestRedirectURIMatching(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		registered []string
		requested  string
		want       bool
	}{
		{"AS-05 exact", []string{"https://app.example.com/cb"}, "https://app.example.com/cb", true},
		{"AS-05 loopback port added", []string{"http://127.0.0.1/cb"}, "http://127.0.0.1:53120/cb", true},
		{"AS-05 loopback port changed", []string{"http://127.0.0.1:3000/cb"}, "http://127.0.0.1:53120/cb", true},
		{"AS-05 IPv6 loopback port", []string{"http://[::1]/cb"}, "http://[::1]:8080/cb", true},
		{"AS-05 loopback query must match", []string{"http://127.0.0.1/cb"}, "http://127.0.0.1:53120/cb?x=1", false},
		{"AS-05 loopback path must match", []string{"http://127.0.0.1/cb"}, "http://127.0.0.1:53120/cb/", false},
		{"AS-05 loopback address must match", []string{"http://127.0.0.1/cb"}, "http://127.0.0.2:53120/cb", false},
		{"AS-05 query appended", []string{"https://app.example.com/cb"}, "https://app.example.com/cb?x=1", false},
		{"AS-05 non-loopback port", []string{"https://app.example.com/cb"}, "https://app.example.com:8443/cb", false},
		{"CIMD-08 localhost never matches 127.0.0.1", []string{"http://127.0.0.1:3000/cb"}, "http://localhost:3000/cb", false},
		{"CIMD-08 127.0.0.1 never matches localhost", []string{"http://localhost:3000/cb"}, "http://127.0.0.1:3000/cb", false},
		{"CIMD-08 localhost port is not exempt", []string{"http://localhost:3000/cb"}, "http://localhost:3001/cb", false},
		{"https loopback port is not exempt", []string{"https://127.0.0.1/cb"}, "https://127.0.0.1:8443/cb", false},
		{"case differs", []string{"https://app.example.com/cb"}, "https://APP.example.com/cb", false},
		{"userinfo", []string{"http://127.0.0.1/cb"}, "http://u@127.0.0.1:1/cb", false},
		{"private-use scheme exact", []string{"com.example.app:/cb"}, "com.example.app:/cb", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := matchRedirectURI(tt.registered, tt.requested); got != tt.want {
				t.Fatalf("match(%v, %q) = %v, want %v", tt.registered, tt.requested, got, tt.want)
			}
		})
	}
}

// TestAuthorizeSuccess covers requirements AS-06 and AS-07: state echoed
// byte for byte, code, state and iss each once, the redirect URI's own
// query kept, and the loopback port exemption end to end.
func TestAuthorizeSuccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tests := []struct {
		name, client, redirect, state string
	}{
		{"AS-07 state with reserved characters", publicID, publicCB, "a b&c=d/é?#%"},
		{"AS-05 loopback port exemption", publicID, "http://127.0.0.1:53120/callback", "s1"},
		{"AS-07 redirect URI with query", webID, webCB, "s2"},
		{"AS-07 no state", publicID, publicCB, ""},
		{"redirect_uri omitted with one registered", publicID, "", "s3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := authParams(tt.client, tt.redirect)
			if tt.state == "" {
				q.Del("state")
			} else {
				q.Set("state", tt.state)
			}
			resp := h.authorize(q)
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("status %d", resp.StatusCode)
			}
			loc := location(t, resp)
			got := loc.Query()
			for _, p := range []string{"code", "iss"} {
				if len(got[p]) != 1 || got.Get(p) == "" {
					t.Fatalf("AS-07: %s appears %d times", p, len(got[p]))
				}
			}
			if tt.state != "" && (len(got["state"]) != 1 || got.Get("state") != tt.state) {
				t.Fatalf("AS-07: state = %q, want %q", got["state"], tt.state)
			}
			if tt.state == "" && got.Has("state") {
				t.Fatal("state sent although none was requested")
			}
			if got.Get("iss") != h.issuer {
				t.Fatalf("AS-06: iss = %q", got.Get("iss"))
			}
			want := tt.redirect
			if want == "" {
				want = publicCB
			}
			base, _, _ := strings.Cut(want, "?")
			if loc.Scheme+"://"+loc.Host+loc.Path != base {
				t.Fatalf("redirected to %s, want %s", loc, want)
			}
			if tt.client == webID && got.Get("tenant") != "1" {
				t.Fatalf("the redirect URI's own query was lost: %s", loc)
			}
		})
	}
}

// TestAuthorizeRedirectURIRequired: a client with several redirect URIs
// must name one (no redirect when it does not).
func TestAuthorizeRedirectURIRequired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	q, _ := authParams(webID, "")
	resp := h.authorize(q)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Fatalf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestAuthorizeMethodNotAllowed: the authorization endpoint answers GET
// only.
func TestAuthorizeMethodNotAllowed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	q, _ := authParams(publicID, publicCB)
	resp, _ := h.post(pathAuthorize, q, "", "")
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /authorize: %d", resp.StatusCode)
	}
}
