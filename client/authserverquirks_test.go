package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestAssumeS256: a server whose metadata omits
// code_challenge_methods_supported is refused unless the issuer's
// AssumeS256 opt-in is set; one that lists methods without S256, or an
// empty list, stays refused with it. Accepted servers still get S256.
func TestAssumeS256(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		as     oauthtest.ASOptions
		assume bool
		ok     bool
	}{
		{"field absent, no opt-in", oauthtest.ASOptions{OmitCodeChallenge: true}, false, false},
		{"field absent, opt-in", oauthtest.ASOptions{OmitCodeChallenge: true}, true, true},
		{"only plain, opt-in", oauthtest.ASOptions{CodeChallengeMethods: []string{"plain"}}, true, false},
		{"empty list, opt-in", oauthtest.ASOptions{CodeChallengeMethods: []string{}}, true, false},
		{"S256 listed, no opt-in", oauthtest.ASOptions{}, false, true},
		{"S256 listed, opt-in", oauthtest.ASOptions{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.as, oauthtest.ResourceOptions{}, nil)
			// The issuer is known once the server runs; set before first use.
			e.c.cfg.AuthServers = map[string]AuthServerOptions{e.as.Issuer(): {AssumeS256: tt.assume}}
			err := e.c.Login(context.Background(), e.rs.MCPURL())
			if !tt.ok {
				if !errors.Is(err, errPKCEUnsupported) || !errors.Is(err, ErrDiscovery) {
					t.Fatalf("Login: %v, want errPKCEUnsupported", err)
				}
				if n := len(e.as.Authorizations()); n != 0 {
					t.Fatalf("%d authorization requests sent to a refused server", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			az := e.as.Authorizations()
			if len(az) != 1 || az[0].Get("code_challenge_method") != "S256" || az[0].Get("code_challenge") == "" {
				t.Fatalf("authorizations: %v", az)
			}
		})
	}
	t.Run("another issuer's opt-in", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{OmitCodeChallenge: true}, oauthtest.ResourceOptions{}, nil)
		e.c.cfg.AuthServers = map[string]AuthServerOptions{"https://other.example.com": {AssumeS256: true}}
		if err := e.c.Login(context.Background(), e.rs.MCPURL()); !errors.Is(err, errPKCEUnsupported) {
			t.Fatalf("Login: %v, want errPKCEUnsupported", err)
		}
	})
}

// loginAndRefresh logs in to e's resource and refreshes once; it returns
// the authorization request, the code exchange and the refresh request.
func loginAndRefresh(t *testing.T, e *env) (authorize, exchange, refresh map[string][]string) {
	t.Helper()
	ctx := context.Background()
	if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	if tok, err := e.c.currentToken(ctx, e.rs.MCPURL()); err != nil || tok == nil {
		t.Fatalf("refresh: %v", err)
	}
	az, trs := e.as.Authorizations(), e.as.TokenRequests()
	if len(az) != 1 || len(trs) != 2 || trs[0].Form.Get("grant_type") != "authorization_code" || trs[1].Form.Get("grant_type") != "refresh_token" {
		t.Fatalf("requests: %d authorizations, token requests %v", len(az), trs)
	}
	return az[0], trs[0].Form, trs[1].Form
}

// TestOmitResource: the resource parameter on the authorization, code
// exchange and refresh requests, by the issuer's options.
func TestOmitResource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                         string
		opts                         AuthServerOptions
		authorize, exchange, refresh bool // resource present
	}{
		{"default", AuthServerOptions{}, true, true, true},
		{"OmitResourceOnRefresh", AuthServerOptions{OmitResourceOnRefresh: true}, true, true, false},
		{"OmitResource", AuthServerOptions{OmitResource: true}, false, false, false},
		{"both", AuthServerOptions{OmitResource: true, OmitResourceOnRefresh: true}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true, ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
			e.c.cfg.AuthServers = map[string]AuthServerOptions{e.as.Issuer(): tt.opts}
			az, ex, rf := loginAndRefresh(t, e)
			for _, r := range []struct {
				name string
				q    map[string][]string
				want bool
			}{{"authorize", az, tt.authorize}, {"code exchange", ex, tt.exchange}, {"refresh", rf, tt.refresh}} {
				v, has := r.q["resource"]
				if has != r.want || has && (len(v) != 1 || v[0] != e.rs.MCPURL()) {
					t.Errorf("%s: resource = %q, want present %v", r.name, v, r.want)
				}
			}
			if az["code_challenge_method"][0] != "S256" {
				t.Errorf("authorize: %v", az)
			}
		})
	}
}

// TestResourceScopes: the scope sent to the authorization server for the
// issuer's ResourceScopes, and nothing else changed: no scope on the code
// exchange or refresh, the stored token remembers the MCP scopes.
func TestResourceScopes(t *testing.T) {
	t.Parallel()
	const def = "api://11111111-2222-3333-4444-555555555555/.default"
	tests := []struct {
		name   string
		as     oauthtest.ASOptions
		scopes []string
		want   string
	}{
		{"none", oauthtest.ASOptions{}, nil, "mcp:basic"},
		{"added", oauthtest.ASOptions{}, []string{"api://mcp/tools", "api://mcp/read"}, "mcp:basic api://mcp/tools api://mcp/read"},
		{"already asked for", oauthtest.ASOptions{}, []string{"mcp:basic"}, "mcp:basic"},
		{"/.default replaces", oauthtest.ASOptions{}, []string{def}, def},
		{"/.default keeps offline_access", oauthtest.ASOptions{ScopesSupported: []string{"offline_access"}}, []string{def}, "offline_access " + def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := tt.as
			as.IssueRefreshTokens, as.ExpiresIn = true, 60
			e := newEnv(t, as, oauthtest.ResourceOptions{ChallengeScope: []string{"mcp:basic"}}, nil)
			e.c.cfg.AuthServers = map[string]AuthServerOptions{e.as.Issuer(): {ResourceScopes: tt.scopes}}
			ctx := context.Background()
			if err := e.login(ctx); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(2 * time.Minute)
			if tok, err := e.c.currentToken(ctx, e.rs.MCPURL()); err != nil || tok == nil {
				t.Fatalf("refresh: %v", err)
			}
			az, trs := e.as.Authorizations(), e.as.TokenRequests()
			if len(az) != 1 || az[0].Get("scope") != tt.want {
				t.Fatalf("authorize scope = %q, want %q", az[0].Get("scope"), tt.want)
			}
			for _, tr := range trs {
				if tr.Form.Has("scope") {
					t.Errorf("%s sent scope %q", tr.Form.Get("grant_type"), tr.Form.Get("scope"))
				}
			}
			st, err := e.c.tokenState(ctx, e.rs.MCPURL())
			if err != nil || !slices.Contains(st.tok.RequestedScopes, "mcp:basic") || slices.Contains(st.tok.RequestedScopes, def) {
				t.Errorf("stored requested scopes = %v, %v; want the MCP scopes", st.tok.RequestedScopes, err)
			}
		})
	}
}

// TestResourceScopesStepUp: a step-up challenge re-authorizes with the
// issuer's resource scopes: added to the union of the MCP scopes, or the
// "/.default" scope alone, which the server grants as the permissions
// consented meanwhile.
func TestResourceScopesStepUp(t *testing.T) {
	t.Parallel()
	const def = "api://mcp/.default"
	tests := []struct {
		name        string
		scopes      []string
		grants      map[string][]string // before the step-up
		grantsAfter map[string][]string // after: an administrator consented to mcp:write
		want        [2]string
	}{
		{"added", []string{"api://mcp/tools"}, nil, nil, [2]string{"mcp:basic api://mcp/tools", "mcp:basic mcp:write api://mcp/tools"}},
		{"/.default", []string{def}, map[string][]string{def: {"mcp:basic"}}, map[string][]string{def: {"mcp:basic", "mcp:write"}}, [2]string{def, def}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, oauthtest.ASOptions{ScopeGrants: tt.grants},
				oauthtest.ResourceOptions{ChallengeScope: []string{"mcp:basic"}, ToolScopes: map[string][]string{"write": {"mcp:write"}}}, nil)
			e.c.cfg.AuthServers = map[string]AuthServerOptions{e.as.Issuer(): {ResourceScopes: tt.scopes}}
			cs, err := e.transportSession(ctx, "2026-07-28")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := callTool(ctx, cs, "echo"); err != nil {
				t.Fatal(err)
			}
			e.as.Update(func(o *oauthtest.ASOptions) { o.ScopeGrants = tt.grantsAfter })
			if err := callTool(ctx, cs, "write"); err != nil {
				t.Fatalf("step-up failed: %v", err)
			}
			az := e.as.Authorizations()
			if len(az) != 2 || az[0].Get("scope") != tt.want[0] || az[1].Get("scope") != tt.want[1] {
				var got []string
				for _, a := range az {
					got = append(got, a.Get("scope"))
				}
				t.Fatalf("authorize scopes %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAuthServerOptionsConfig: New refuses resource scopes that are not
// scope tokens, repeat, or combine "/.default" with another scope.
func TestAuthServerOptionsConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scopes []string
		ok     bool
	}{
		{"nil", nil, true},
		{"one", []string{"api://mcp/tools"}, true},
		{"two", []string{"api://mcp/tools", "api://mcp/read"}, true},
		{"default", []string{"api://mcp/.default"}, true},
		{"default and another", []string{"api://mcp/.default", "api://mcp/tools"}, false},
		{"two defaults", []string{"api://a/.default", "api://b/.default"}, false},
		{"space", []string{"a b"}, false},
		{"empty", []string{""}, false},
		{"quote", []string{`a"b`}, false},
		{"twice", []string{"a", "a"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Authorizer: &FollowRedirects{}, Store: tokenstore.NewMemory(),
				AuthServers: map[string]AuthServerOptions{"https://as.example.com": {ResourceScopes: tt.scopes, AssumeS256: true, OmitResource: true}}})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Errorf("New: %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestQuirksClientCredentials: a machine grant's token request carries the
// resource and scope by the issuer's options, as the authorization code
// flow does (Entra's client credentials take only a "/.default" scope).
func TestQuirksClientCredentials(t *testing.T) {
	t.Parallel()
	const def = "api://mcp/.default"
	tests := []struct {
		name     string
		opts     AuthServerOptions
		resource bool
		scope    string
	}{
		{"default", AuthServerOptions{}, true, "mcp:basic"},
		{"resource scope added", AuthServerOptions{ResourceScopes: []string{"api://mcp/tools"}}, true, "mcp:basic api://mcp/tools"},
		{"entra", AuthServerOptions{OmitResource: true, ResourceScopes: []string{def}, AssumeS256: true}, false, def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var forms []url.Values
			as := oauthtest.NewAS(t, oauthtest.ASOptions{})
			iss := as.Issuer()
			as.Update(func(o *oauthtest.ASOptions) {
				o.Faults = map[string]http.HandlerFunc{
					"/.well-known/oauth-authorization-server": func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "application/json")
						json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "authorization_endpoint": iss + "/authorize",
							"token_endpoint": iss + "/token", "response_types_supported": []string{"code"},
							"grant_types_supported": []string{"client_credentials"}, "code_challenge_methods_supported": []string{"S256"},
							"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
					},
					"/token": func(w http.ResponseWriter, r *http.Request) {
						if err := r.ParseForm(); err != nil {
							http.Error(w, "bad form", http.StatusBadRequest)
							return
						}
						mu.Lock()
						forms = append(forms, r.PostForm)
						mu.Unlock()
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":3600}`)
					},
				}
			})
			rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{ScopesSupported: []string{"mcp:basic"}}, as)
			clock := oauthtest.NewClock(oauthtest.Epoch())
			c, err := New(Config{Grant: &ClientCredentials{Issuer: iss, Credentials: Credentials{ClientID: "svc", ClientSecret: "s3cret"}},
				Store: tokenstore.NewMemory(), InsecureAllowHTTPLoopback: true, Now: clock.Now,
				AuthServers: map[string]AuthServerOptions{iss: tt.opts}})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Login(context.Background(), rs.MCPURL()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(forms) != 1 {
				t.Fatalf("token requests = %d, want 1", len(forms))
			}
			f := forms[0]
			if f.Get("grant_type") != "client_credentials" || f.Get("scope") != tt.scope || f.Has("resource") != tt.resource ||
				tt.resource && f.Get("resource") != rs.MCPURL() {
				t.Errorf("token request %v; want scope %q, resource %v", f, tt.scope, tt.resource)
			}
		})
	}
}
