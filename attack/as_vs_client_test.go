package attack

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
)

// TestHonestFlowClient is the positive control for the client attacks: the
// production client, the authorization server and the resource server on
// the vnet, https only, public addresses only.
func TestHonestFlowClient(t *testing.T) {
	t.Parallel()
	n, sec, logs := newVNet(t), &secrets{}, &logSink{}
	sec.Watch(logs)
	as := startAS(t, n, "as.example.com", sec, logs, asOptions{})
	honestMCP(t, n, as.Issuer, nil, nil)
	e := newClientEnv(t, n, sec, nil)
	status, err := e.call(context.Background())
	if err != nil || status != http.StatusOK {
		t.Fatalf("status %d, err %v", status, err)
	}
	if as.Hits("/token") != 1 || e.auth.n.Load() != 1 {
		t.Errorf("token requests %d, authorizations %d", as.Hits("/token"), e.auth.n.Load())
	}
	sec.Check(t)
}

// rewriteAuthorizeRedirect changes the query of the authorization
// responses the server sends.
func rewriteAuthorizeRedirect(edit func(q url.Values)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return authservertest.RewriteAuthorizationResponse(next, edit) }
}

// replacePath answers path (a prefix when it ends in "/") with h.
func replacePath(path string, h http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path || strings.HasSuffix(path, "/") && strings.HasPrefix(r.URL.Path, path) {
				h(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func redirectTo(target string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, http.StatusFound) }
}

func hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func huge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"x":"`))
	chunk := []byte(strings.Repeat("A", 64<<10))
	for range 64 { // 4 MiB
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	w.Write([]byte(`"}`))
}

// TestMaliciousASClient plays a hostile authorization server against
// mcpauth's client (RFC 9207, RFC 8414 §3.3, RFC 9700 §4.4; MCP Security
// Best Practices; requirements CL-07, CL-08, CL-12, CL-13, CL-22, CL-23).
// The MCP server honestly names evil.example.com as its authorization
// server; the honest as.example.com also exists, so a mix-up has somewhere
// to send the code. Each case must fail with the right error, send no code
// or verifier anywhere it should not go, and leak nothing.
func TestMaliciousASClient(t *testing.T) {
	t.Parallel()
	const honest = "https://as.example.com"
	type check struct {
		authorize bool // the browser reached evil's /authorize
	}
	cases := []struct {
		name   string
		o      asOptions
		cfg    func(*client.Config)
		want   []error // the error matches one of these
		reach  check
		tokens int64 // token requests evil may receive
	}{
		{name: "CL-12 mix-up: iss of another authorization server",
			o:    asOptions{wrap: rewriteAuthorizeRedirect(func(q url.Values) { q.Set("iss", honest) })},
			want: []error{errIssuerParameterMismatch}, reach: check{authorize: true}},
		{name: "CL-12 iss with a trailing slash (no normalisation)",
			o:    asOptions{wrap: rewriteAuthorizeRedirect(func(q url.Values) { q.Set("iss", q.Get("iss")+"/") })},
			want: []error{errIssuerParameterMismatch}, reach: check{authorize: true}},
		{name: "CL-12 iss missing although advertised",
			o:    asOptions{wrap: rewriteAuthorizeRedirect(func(q url.Values) { q.Del("iss") })},
			want: []error{errIssuerMissing}, reach: check{authorize: true}},
		{name: "CL-12 error response from the wrong issuer is not acted on",
			o: asOptions{wrap: rewriteAuthorizeRedirect(func(q url.Values) {
				q.Del("code")
				q.Set("error", "access_denied")
				q.Set("error_description", "visit https://evil.example.com/phish")
				q.Set("iss", honest)
			})},
			want: []error{errIssuerParameterMismatch}, reach: check{authorize: true}},
		{name: "CL-10 state replaced",
			o:    asOptions{wrap: rewriteAuthorizeRedirect(func(q url.Values) { q.Set("state", "attacker-state-0123456789") })},
			want: []error{errUnknownState}, reach: check{authorize: true}},
		{name: "CL-07 metadata at evil names the honest issuer",
			o:    asOptions{meta: func(m map[string]any) { m["issuer"] = honest }},
			want: []error{errIssuerMismatch}},
		{name: "CL-07 metadata issuer differs by case",
			o:    asOptions{meta: func(m map[string]any) { m["issuer"] = "https://EVIL.example.com" }},
			want: []error{errIssuerMismatch}},
		{name: "CL-08 PKCE not advertised",
			o:    asOptions{meta: func(m map[string]any) { delete(m, "code_challenge_methods_supported") }},
			want: []error{errPKCEUnsupported}},
		{name: "CL-08 only plain PKCE",
			o:    asOptions{meta: func(m map[string]any) { m["code_challenge_methods_supported"] = []string{"plain"} }},
			want: []error{errPKCEUnsupported}},
		{name: "CL-22 javascript: authorization endpoint",
			o:    asOptions{meta: func(m map[string]any) { m["authorization_endpoint"] = "javascript:alert(document.cookie)//" }},
			want: []error{errUnsafeURL, errInvalidMetadata}},
		{name: "CL-22 data: authorization endpoint",
			o:    asOptions{meta: func(m map[string]any) { m["authorization_endpoint"] = "data:text/html,<script>alert(1)</script>" }},
			want: []error{errUnsafeURL, errInvalidMetadata}},
		{name: "CL-22 file: authorization endpoint",
			o:    asOptions{meta: func(m map[string]any) { m["authorization_endpoint"] = "file:///etc/passwd" }},
			want: []error{errUnsafeURL, errInvalidMetadata}},
		{name: "CL-22 command injection through the authorization endpoint",
			o:    asOptions{meta: func(m map[string]any) { m["authorization_endpoint"] = "https://evil.example.com/a\"; calc.exe; \"" }},
			want: []error{errUnsafeURL, errInvalidMetadata}},
		{name: "CL-22 plain http authorization endpoint",
			o:    asOptions{meta: func(m map[string]any) { m["authorization_endpoint"] = "http://evil.example.com/authorize" }},
			want: []error{errUnsafeURL, errInvalidMetadata}},
		{name: "CL-23 token endpoint on an internal name",
			o:    asOptions{meta: func(m map[string]any) { m["token_endpoint"] = "https://internal.example.com/token" }},
			want: []error{errBlockedAddress}, reach: check{authorize: true}},
		{name: "CL-23 token endpoint at the cloud metadata address",
			o:    asOptions{meta: func(m map[string]any) { m["token_endpoint"] = "https://169.254.169.254/token" }},
			want: []error{errBlockedAddress, errUnsafeURL, errInvalidMetadata}, reach: check{authorize: true}},
		{name: "CL-23 registration endpoint on an internal name",
			o:    asOptions{meta: func(m map[string]any) { m["registration_endpoint"] = "https://internal.example.com/register" }},
			want: []error{errBlockedAddress, errRegistration}},
		{name: "CL-23 metadata redirects to an internal name",
			o:    asOptions{wrap: replacePath("/.well-known/", redirectTo("https://internal.example.com/.well-known/oauth-authorization-server"))},
			want: []error{errFetch, errBlockedAddress, errNoAuthServerMetadata}},
		{name: "CL-23 metadata redirects to the cloud metadata service",
			o:    asOptions{wrap: replacePath("/.well-known/", redirectTo("http://169.254.169.254/latest/meta-data/"))},
			want: []error{errFetch, errBlockedAddress, errNoAuthServerMetadata}},
		{name: "CL-23 browser redirected to an internal address by the authorization endpoint",
			o:    asOptions{wrap: replacePath("/authorize", redirectTo("https://internal.example.com/admin"))},
			want: []error{errAuthorizer, errBlockedAddress}, reach: check{authorize: true}},
		{name: "oversized metadata (4 MiB)",
			o:    asOptions{wrap: replacePath("/.well-known/", huge)},
			want: []error{errFetch, errResponseTooLarge, errNoAuthServerMetadata}},
		{name: "slow metadata (never answers)",
			o:    asOptions{wrap: replacePath("/.well-known/", hang)},
			cfg:  func(c *client.Config) { c.Timeout = 300 * time.Millisecond },
			want: []error{errFetch, errNoAuthServerMetadata, context.DeadlineExceeded}},
		{name: "oversized token response (4 MiB)",
			o:    asOptions{wrap: replacePath("/token", huge)},
			want: []error{errResponseTooLarge, errTokenResponse}, reach: check{authorize: true}, tokens: 1},
		{name: "slow token endpoint (never answers)",
			o:    asOptions{wrap: replacePath("/token", hang)},
			cfg:  func(c *client.Config) { c.Timeout = 300 * time.Millisecond },
			want: []error{errTokenResponse, errFetch, context.DeadlineExceeded}, reach: check{authorize: true}, tokens: 1},
		{name: "token_type other than Bearer",
			o: asOptions{wrap: replacePath("/token", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"access_token":"mac-token-0123456789abcdef","token_type":"mac","expires_in":3600}`))
			})},
			want: []error{errTokenType}, reach: check{authorize: true}, tokens: 1},
		{name: "token response with duplicate access_token members",
			o: asOptions{wrap: replacePath("/token", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"access_token":"first-0123456789abcdef","access_token":"second-0123456789abcdef","token_type":"Bearer"}`))
			})},
			want: []error{errTokenResponse}, reach: check{authorize: true}, tokens: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, sec, logs := newVNet(t), &secrets{}, &logSink{}
			sec.Watch(logs)
			n.Internal("internal.example.com", "10.0.0.5")
			good := startAS(t, n, "as.example.com", sec, logs, asOptions{})
			evil := startAS(t, n, "evil.example.com", sec, logs, tc.o)
			honestMCP(t, n, evil.Issuer, nil, nil)
			e := newClientEnv(t, n, sec, tc.cfg)
			start := time.Now()
			status, err := e.call(context.Background())
			if err == nil {
				t.Fatalf("the request succeeded (status %d); want one of %v", status, tc.want)
			}
			if !matchesAny(err, tc.want) {
				t.Errorf("err = %v; want one of %v", err, tc.want)
			}
			if d := time.Since(start); tc.cfg != nil && d > 5*time.Second {
				t.Errorf("took %v with a 300 ms timeout; every fetch must be bounded", d)
			}
			if got := evil.Hits("/authorize") > 0; got != tc.reach.authorize {
				t.Errorf("authorization endpoint reached: %v; want %v", got, tc.reach.authorize)
			}
			if got := evil.Hits("/token"); got > tc.tokens {
				t.Errorf("evil received %d token requests; want at most %d", got, tc.tokens)
			}
			if good.Hits("/token")+good.Hits("/authorize") != 0 {
				t.Error("CL-13: the honest authorization server was sent a code or a browser")
			}
			sec.Check(t)
		})
	}
}

func matchesAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
