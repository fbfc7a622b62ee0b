package authserver

import (
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func TestParseGrantPolicy(t *testing.T) {
	example, err := os.ReadFile("testdata/grant-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		wantErr string // "" means valid
	}{
		{"example file", string(example), ""},
		{"empty", `{}`, ""},
		{"unknown member", `{"defaults":["mcp:read"]}`, "unknown name at /defaults"},
		{"misspelt map", `{"group":{"a":["mcp:read"]}}`, "unknown name"},
		{"duplicate member", `{"default":["mcp:read"],"default":["mcp:admin"]}`, "duplicate object name"},
		{"duplicate user", `{"users":{"bob":["mcp:read"],"bob":["mcp:admin"]}}`, "duplicate object name"},
		{"duplicate email in other case", `{"users":{"Bob@Example.com":["mcp:read"],"bob@example.com":["mcp:admin"]}}`, "appears twice"},
		{"duplicate domain in other case", `{"email_domains":{"Example.com":["mcp:read"],"example.COM":["mcp:admin"]}}`, "appears twice"},
		{"ids are case-sensitive", `{"users":{"Bob":["mcp:read"],"bob":["mcp:admin"]}}`, ""},
		{"scope with a space", `{"default":["mcp:read mcp:write"]}`, "is not a scope"},
		{"empty scope", `{"groups":{"g":[""]}}`, "is not a scope"},
		{"empty name", `{"groups":{"":["mcp:read"]}}`, "empty name"},
		{"wrong type", `{"users":["bob"]}`, "unexpected value"},
		{"not an object", `["mcp:read"]`, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseGrantPolicy([]byte(tc.in))
			if tc.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("ParseGrantPolicy: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a ConfigError saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestGrantPolicyApply(t *testing.T) {
	p, err := ParseGrantPolicy([]byte(`{
		"default": ["mcp:read"],
		"users": {"alice@example.com": ["mcp:write"], "42": ["mcp:write"]},
		"groups": {"admins": ["mcp:admin"]},
		"email_domains": {"corp.example": ["mcp:write"]},
		"required": ["mcp:admin"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := compileGrantPolicy(p, []string{"mcp:read", "mcp:write", "mcp:admin"})
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := compileGrantPolicy(&GrantPolicy{Groups: map[string][]string{"admins": {"mcp:admin"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := &UpstreamIdentity{Subject: "a1", Email: "Alice@Example.com", EmailVerified: true}
	tests := []struct {
		name       string
		policy     *compiledGrantPolicy
		id         *UpstreamIdentity
		unverified bool
		requested  []string
		want       []string
		denied     bool
	}{
		{"default only", c, &UpstreamIdentity{Subject: "x"}, false, []string{"mcp:read", "mcp:write"}, []string{"mcp:read"}, false},
		{"email entry", c, alice, false, []string{"mcp:read", "mcp:write"}, []string{"mcp:read", "mcp:write"}, false},
		{"email unverified", c, &UpstreamIdentity{Subject: "a1", Email: "alice@example.com"}, false, []string{"mcp:write"}, nil, true},
		{"email unverified allowed", c, &UpstreamIdentity{Subject: "a1", Email: "alice@example.com"}, true, []string{"mcp:write"}, []string{"mcp:write"}, false},
		{"id entry", c, &UpstreamIdentity{Subject: "42"}, false, []string{"mcp:write"}, []string{"mcp:write"}, false},
		{"email as sub does not match", c, &UpstreamIdentity{Subject: "alice@example.com"}, false, []string{"mcp:write"}, nil, true},
		{"domain entry", c, &UpstreamIdentity{Subject: "b", Email: "bob@CORP.example", EmailVerified: true}, false, []string{"mcp:write"}, []string{"mcp:write"}, false},
		{"subdomain not implied", c, &UpstreamIdentity{Subject: "b", Email: "bob@x.corp.example", EmailVerified: true}, false, []string{"mcp:write"}, nil, true},
		{"group entry", c, &UpstreamIdentity{Subject: "g", Groups: []string{"admins"}}, false, []string{"mcp:admin"}, []string{"mcp:admin"}, false},
		{"required scope refused", c, alice, false, []string{"mcp:read", "mcp:admin"}, nil, true},
		{"intersection empty", c, &UpstreamIdentity{Subject: "x"}, false, []string{"mcp:write"}, nil, true},
		{"nothing requested", c, &UpstreamIdentity{Subject: "x"}, false, nil, nil, false},
		{"user allowed nothing", nobody, alice, false, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, oe := tc.policy.apply(keysOf(tc.id, tc.unverified), tc.requested)
			if tc.denied {
				if oe == nil || oe.Code != oauthmeta.CodeAccessDenied {
					t.Fatalf("apply = %v, %v; want access_denied", got, oe)
				}
				return
			}
			if oe != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("apply = %v, %v; want %v", got, oe, tc.want)
			}
		})
	}
}

func TestGrantPolicyScopesSupported(t *testing.T) {
	cfg := Config{Issuer: "https://as.example", Scopes: []string{"mcp:read"}, Login: newFakeLogin(),
		Allow: AllowList{AllowAnyUser: true}, GrantPolicy: &GrantPolicy{Default: []string{"mcp:raed"}}}
	if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "not in Scopes") {
		t.Fatalf("New: %v, want a ConfigError for the misspelt scope", err)
	}
}

// policyLogin logs the fake login's alice (alice@example.com, verified,
// group "staff") in for scope and returns the final redirect and the
// request's verifier.
func policyLogin(t *testing.T, h *harness, scope string) (*url.URL, url.Values, string) {
	t.Helper()
	q, verifier := authParams(publicID, publicCB)
	q.Set("scope", scope)
	return location(t, newBrowser(t, h).login(q)), q, verifier
}

// TestGrantPolicyLogin: the token carries requested ∩ allowed and says so;
// a user allowed none of the request, or refused a required scope (a
// step-up), gets access_denied with state and iss.
func TestGrantPolicyLogin(t *testing.T) {
	policy := &GrantPolicy{
		Default:  []string{"mcp:read"},
		Groups:   map[string][]string{"staff": {"mcp:write"}, "admins": {"mcp:admin"}},
		Required: []string{"mcp:admin"},
	}
	tests := []struct {
		name      string
		policy    *GrantPolicy
		scope     string
		wantScope string // "" means access_denied
	}{
		{"narrowed", &GrantPolicy{Default: []string{"mcp:read"}}, "mcp:read mcp:write", "mcp:read"},
		{"all allowed", policy, "mcp:read mcp:write", "mcp:read mcp:write"},
		{"optional scope dropped", policy, "mcp:read", "mcp:read"},
		{"step-up to an allowed scope", policy, "mcp:read mcp:write", "mcp:read mcp:write"},
		{"step-up to a refused required scope", policy, "mcp:read mcp:admin", ""},
		{"nothing allowed of the request", &GrantPolicy{Default: []string{"mcp:read"}}, "mcp:write", ""},
		{"user refused", &GrantPolicy{Groups: map[string][]string{"admins": {"mcp:read"}}}, "mcp:read", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := upstreamHarness(t, func(c *Config) { c.GrantPolicy = tc.policy })
			loc, q, verifier := policyLogin(t, h, tc.scope)
			if loc.Query().Get("state") != q.Get("state") || loc.Query().Get("iss") != h.issuer {
				t.Fatalf("redirect without state or iss: %s", loc)
			}
			if tc.wantScope == "" {
				if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
					t.Fatalf("got %s, want access_denied", loc)
				}
				return
			}
			res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
			if res.tok == nil {
				t.Fatalf("token: %d %s (redirect %s)", res.status, res.body, loc)
			}
			_, claims := h.verifyJWT(res.tok.AccessToken)
			if res.tok.Scope != tc.wantScope || claims["scope"] != tc.wantScope {
				t.Errorf("token scope %q, claim %v; want %q", res.tok.Scope, claims["scope"], tc.wantScope)
			}
		})
	}
}

// TestGrantPolicyRefresh: a refresh drops the scopes the current policy
// allows nobody, and a grant left with none is not refreshed.
func TestGrantPolicyRefresh(t *testing.T) {
	h, _ := upstreamHarness(t, func(c *Config) {
		c.GrantPolicy = &GrantPolicy{Default: []string{"mcp:read", "mcp:write"}}
	})
	loc, _, verifier := policyLogin(t, h, "mcp:read mcp:write")
	res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
	if res.tok == nil || res.tok.RefreshToken == "" || res.tok.Scope != "mcp:read mcp:write" {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	refresh := func(rt string) tokenResult {
		return h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}, "", "")
	}
	// Unchanged policy: the grant's scopes.
	res = refresh(res.tok.RefreshToken)
	if res.tok == nil || res.tok.Scope != "mcp:read mcp:write" {
		t.Fatalf("refresh: %d %s", res.status, res.body)
	}
	// mcp:write is withdrawn from everyone.
	h.as.login.policy, _ = compileGrantPolicy(&GrantPolicy{Default: []string{"mcp:read"}}, nil)
	res = refresh(res.tok.RefreshToken)
	if res.tok == nil || res.tok.Scope != "mcp:read" {
		t.Fatalf("refresh after narrowing: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["scope"] != "mcp:read" {
		t.Errorf("access token scope %v", claims["scope"])
	}
	// Nothing of the grant is allowed any more.
	h.as.login.policy, _ = compileGrantPolicy(&GrantPolicy{Default: []string{"mcp:admin"}}, nil)
	wantError(t, refresh(res.tok.RefreshToken), 400, oauthmeta.CodeInvalidGrant)
}
