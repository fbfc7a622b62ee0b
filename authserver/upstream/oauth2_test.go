package upstream

import (
	"errors"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// githubHarness starts an authorization server logging users in at a
// GitHub fake through the github preset, its URLs pointed at the fake.
func githubHarness(t *testing.T, mutate func(*testConfig)) (*harness, *oauthtest.GitHub) {
	t.Helper()
	g := oauthtest.NewGitHub(t)
	h := newHarness(t, "", func(c *testConfig) {
		p, err := Preset(PresetGitHub, "")
		if err != nil {
			t.Fatal(err)
		}
		up := fromPreset(p)
		up.OAuth2.AuthorizationEndpoint, up.OAuth2.TokenEndpoint = g.AuthorizationURL(), g.TokenURL()
		up.OAuth2.UserInfoEndpoint, up.OAuth2.EmailsEndpoint = g.UserURL(), g.EmailsURL()
		up.ClientID, up.ClientSecret = g.ClientID, g.ClientSecret
		up.Allow = authserver.AllowList{EmailDomains: []string{"example.com"}}
		up.Fetch.InsecureAllowHTTPLoopback = true
		// Long enough for a loaded machine; the slow faults wait it out.
		up.Timeout = 2 * time.Second
		c.Consent = authserver.ConsentPrompt
		c.Upstream = up
		if mutate != nil {
			mutate(c)
		}
	})
	g.Register(h.as.UpstreamCallbackURL())
	return h, g
}

func TestUpstreamOAuth2Login(t *testing.T) {
	h, g := githubHarness(t, nil)
	b := newBrowser(t, h)
	q, verifier := authParams(publicID, publicCB)
	q.Set("scope", "mcp:read")
	up := b.toUpstream(q)
	if !strings.HasPrefix(up.String(), g.AuthorizationURL()+"?") {
		t.Fatalf("sent to %s, want the GitHub fake", up)
	}
	uq := up.Query()
	for k, want := range map[string]string{
		"client_id": g.ClientID, "redirect_uri": h.as.UpstreamCallbackURL(), "response_type": "code",
		"code_challenge_method": "S256", "scope": "read:user user:email",
	} {
		if got := uq.Get(k); got != want {
			t.Errorf("upstream %s = %q, want %q", k, got, want)
		}
	}
	if uq.Has("nonce") || len(uq.Get("state")) < 43 {
		t.Errorf("upstream request: nonce sent to a plain OAuth provider, or weak state: %v", uq)
	}
	back := location(t, b.do(up.String()))
	loc := location(t, b.do(back.String()))
	if loc.Query().Get("code") == "" || loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
		t.Fatalf("final redirect %s; logs: %s", loc, h.logs.String())
	}
	res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	_, claims := h.verifyJWT(res.tok.AccessToken)
	if want := Subject("https://github.com", "583231"); claims["sub"] != want {
		t.Errorf("sub = %v, want %s", claims["sub"], want)
	}
	// The access token went to the user-info origin only.
	if got := g.BearerPaths(); !slices.Equal(got, []string{"/api/user", "/api/user/emails"}) {
		t.Errorf("bearer token sent to %v", got)
	}
	if strings.Contains(h.logs.String(), "gho_") {
		t.Error("the upstream access token was logged")
	}
	// The state is single-use.
	if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
		t.Errorf("replayed state: %d, want 403", resp.StatusCode)
	}
}

func TestUpstreamOAuth2Failures(t *testing.T) {
	big := `{"id":1,"login":"x","pad":"` + strings.Repeat("a", maxUserInfoBytes) + `"}`
	tests := []struct {
		name   string
		faults oauthtest.GitHubFaults
		user   *oauthtest.GitHubUser
		allow  *authserver.AllowList
		want   string // the error the MCP client gets; "" means a code
		reason string // what the log says
	}{
		{name: "user-info 500", faults: oauthtest.GitHubFaults{UserStatus: 500}, want: "temporarily_unavailable", reason: "user-info endpoint unavailable"},
		{name: "user-info slow", faults: oauthtest.GitHubFaults{UserSlow: true}, want: "temporarily_unavailable", reason: "user-info endpoint unavailable"},
		{name: "user-info 401", faults: oauthtest.GitHubFaults{UserStatus: 401}, want: "access_denied", reason: "unexpected HTTP status"},
		{name: "user-info oversized", faults: oauthtest.GitHubFaults{UserBody: big}, want: "access_denied", reason: "exceeds 65536 bytes"},
		{name: "user-info not JSON", faults: oauthtest.GitHubFaults{UserBody: `<html>`}, want: "access_denied", reason: "not a JSON object"},
		{name: "missing id", faults: oauthtest.GitHubFaults{UserBody: `{"login":"octocat"}`}, want: "access_denied", reason: `id\": missing`},
		{name: "fractional id", faults: oauthtest.GitHubFaults{UserBody: `{"id":1.5}`}, want: "access_denied", reason: "not an integer"},
		{name: "duplicate id", faults: oauthtest.GitHubFaults{UserBody: `{"id":1,"id":2}`}, want: "access_denied", reason: "duplicate object name"},
		{name: "token error", faults: oauthtest.GitHubFaults{TokenError: "bad_verification_code"}, want: "access_denied", reason: "refused the code"},
		{name: "no emails access", user: &oauthtest.GitHubUser{ID: 7, Login: "eve", Email: "eve@example.com"}, want: "access_denied", reason: "refused by the allow-list"},
		{name: "primary email unverified", user: &oauthtest.GitHubUser{ID: 7, Login: "eve", Emails: []oauthtest.GitHubEmail{{Email: "eve@example.com", Primary: true}}},
			want: "access_denied", reason: "refused by the allow-list"},
		{name: "admitted by id", user: &oauthtest.GitHubUser{ID: 7, Login: "eve"}, allow: &authserver.AllowList{Users: []string{"7"}}},
		{name: "login is not an id", user: &oauthtest.GitHubUser{ID: 7, Login: "eve"}, allow: &authserver.AllowList{Users: []string{"eve"}},
			want: "access_denied", reason: "refused by the allow-list"},
		{name: "string id", faults: oauthtest.GitHubFaults{UserBody: `{"id":"abc"}`}, allow: &authserver.AllowList{Users: []string{"abc"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, g := githubHarness(t, func(c *testConfig) {
				if tc.allow != nil {
					c.Upstream.Allow = *tc.allow
				}
			})
			if tc.user != nil {
				g.SetUser(*tc.user)
			}
			g.SetFaults(tc.faults)
			q, _ := authParams(publicID, publicCB)
			loc := location(t, newBrowser(t, h).login(q))
			if got := loc.Query().Get("error"); got != tc.want || (tc.want == "") != (loc.Query().Get("code") != "") {
				t.Fatalf("got %s, want error %q; logs: %s", loc, tc.want, h.logs.String())
			}
			if loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
				t.Errorf("redirect without state or iss: %s", loc)
			}
			if logs := h.logs.String(); tc.reason != "" && !strings.Contains(logs, tc.reason) {
				t.Errorf("refused, but not because %q: %s", tc.reason, logs)
			}
		})
	}
}

func TestUpstreamOAuth2ConfigErrors(t *testing.T) {
	base := func() *upstreamConfig {
		p, _ := Preset(PresetGitHub, "")
		c := fromPreset(p)
		c.ClientID, c.Allow = "c", authserver.AllowList{AllowAnyUser: true}
		return c
	}
	tests := []struct {
		name   string
		mutate func(c *upstreamConfig)
	}{
		{"emails at another origin", func(c *upstreamConfig) { c.OAuth2.EmailsEndpoint = "https://evil.example/user/emails" }},
		{"no user-info endpoint", func(c *upstreamConfig) { c.OAuth2.UserInfoEndpoint = "" }},
		{"http token endpoint", func(c *upstreamConfig) { c.OAuth2.TokenEndpoint = "http://github.com/login/oauth/access_token" }},
		{"unknown auth method", func(c *upstreamConfig) { c.OAuth2.TokenEndpointAuthMethod = "tls_client_auth" }},
		{"no issuer", func(c *upstreamConfig) { c.Issuer = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig{Config: authserver.Config{Issuer: "https://as.example"}, Upstream: base()}
			tc.mutate(cfg.Upstream)
			if _, _, err := newServer(t, cfg); !errors.Is(err, authserver.ErrConfig) {
				t.Fatalf("New: %v, want a ConfigError", err)
			}
		})
	}
	if _, _, err := newServer(t, testConfig{Config: authserver.Config{Issuer: "https://as.example"}, Upstream: base()}); err != nil {
		t.Fatalf("the github preset: %v", err)
	}
}

func TestUpstreamPreset(t *testing.T) {
	tests := []struct {
		name, tenant string
		want         upstreamConfig
		oauth2       *OAuth2Endpoints
		wantErr      bool
	}{
		{name: "github", want: upstreamConfig{Issuer: "https://github.com", Scopes: []string{"read:user", "user:email"}},
			oauth2: &OAuth2Endpoints{
				AuthorizationEndpoint: "https://github.com/login/oauth/authorize", TokenEndpoint: "https://github.com/login/oauth/access_token",
				TokenEndpointAuthMethod: "client_secret_post", UserInfoEndpoint: "https://api.github.com/user",
				EmailsEndpoint: "https://api.github.com/user/emails", IDField: "id", NameField: "login", EmailField: "email",
			}},
		{name: "google", want: upstreamConfig{Issuer: "https://accounts.google.com",
			AuthParams: map[string]string{"access_type": "offline", "prompt": "consent"}}},
		{name: "entra", tenant: "contoso.onmicrosoft.com", want: upstreamConfig{Issuer: "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0"}},
		{name: "entra", tenant: "9188040d-6c67-4c5b-b112-36a304b66dad", want: upstreamConfig{Issuer: "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"}},
		{name: "entra", wantErr: true},
		{name: "entra", tenant: "consumers", wantErr: true}, // common and organizations: TestMultiTenantConfig
		{name: "entra", tenant: "Consumers", wantErr: true},
		{name: "entra", tenant: "a/../b", wantErr: true},
		{name: "https://idp.example/realms/x", want: upstreamConfig{Issuer: "https://idp.example/realms/x"}},
		{name: "google", tenant: "t", wantErr: true},
		{name: "gitlab", wantErr: true},
		{name: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name+" "+tc.tenant, func(t *testing.T) {
			got, err := Preset(tc.name, tc.tenant)
			if tc.wantErr {
				if !errors.Is(err, authserver.ErrConfig) {
					t.Fatalf("err = %v, want a ConfigError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Issuer != tc.want.Issuer || !slices.Equal(got.Scopes, tc.want.Scopes) || got.ClientID != "" ||
				!maps.Equal(got.AuthParams, tc.want.AuthParams) ||
				(got.OAuth2 == nil) != (tc.oauth2 == nil) || (tc.oauth2 != nil && *got.OAuth2 != *tc.oauth2) {
				t.Errorf("UpstreamPreset = %+v (OAuth2 %+v)", got, got.OAuth2)
			}
		})
	}
}

// TestUpstreamAssertionAudience: a private_key_jwt assertion names the
// OpenID provider's issuer, or a plain OAuth 2.0 provider's token endpoint.
func TestUpstreamAssertionAudience(t *testing.T) {
	m := &oauthmeta.AuthServerMetadata{Issuer: "https://github.com", TokenEndpoint: "https://github.com/login/oauth/access_token"}
	if got := (&oidcProvider{}).assertionAudience(m); got != m.Issuer {
		t.Errorf("OpenID Connect: aud %q", got)
	}
	if got := (&oauth2Provider{}).assertionAudience(m); got != m.TokenEndpoint {
		t.Errorf("plain OAuth 2.0: aud %q", got)
	}
}

func TestUserID(t *testing.T) {
	for in, want := range map[string]string{`583231`: "583231", `"abc"`: "abc", `-5`: "-5"} {
		if got, err := userID([]byte(in)); err != nil || got != want {
			t.Errorf("userID(%s) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{``, `1.5`, `1e3`, `""`, `null`, `true`, `[1]`, `{"a":1}`, `-`, `"` + strings.Repeat("a", 256) + `"`} {
		if got, err := userID([]byte(in)); err == nil {
			t.Errorf("userID(%s) = %q, want an error", in, got)
		}
	}
}

// TestUpstreamOAuth2TokenAcceptJSON: the token endpoint is asked for JSON,
// without changing the caller's request.
func TestUpstreamOAuth2TokenAcceptJSON(t *testing.T) {
	var seen string
	rt := acceptJSONTransport{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.Header.Get("Accept")
		return nil, errors.New("stop")
	})}
	req, _ := http.NewRequest(http.MethodPost, "https://github.com/login/oauth/access_token", nil)
	_, _ = rt.RoundTrip(req)
	if seen != "application/json" || req.Header.Get("Accept") != "" {
		t.Errorf("sent Accept %q; caller's request now has %q", seen, req.Header.Get("Accept"))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
