package authserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Clients of TestClientScopes.
const (
	ceilingID  = "ceiling-app"
	defaultsID = "defaults-app"
)

// scopeOutcome is what an authorization request for a scope ended with:
// the granted scope, or the error of the redirect.
type scopeOutcome struct {
	granted string
	code    string
	desc    string
}

// authorizeScope runs an authorization request for client (a public client
// at redirectURI) asking for scope ("" sends none) and, when it succeeds,
// redeems the code.
func (h *harness) authorizeScope(t *testing.T, clientID, redirectURI, scope string) scopeOutcome {
	t.Helper()
	q, v := authParams(clientID, redirectURI)
	if scope != "" {
		q.Set("scope", scope)
	}
	resp := h.authorize(q)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: status %d", resp.StatusCode)
	}
	loc := location(t, resp).Query()
	if e := loc.Get("error"); e != "" {
		return scopeOutcome{code: e, desc: loc.Get("error_description")}
	}
	res := h.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Get("code")}, "code_verifier": {v},
		"client_id": {clientID}, "redirect_uri": {redirectURI}}, "", "")
	if res.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	return scopeOutcome{granted: res.tok.Scope}
}

// TestClientScopes: a scope registered through Dynamic Client Registration
// or a Client ID Metadata Document is the client's default, never a
// ceiling, so the client can step up to any supported scope (MCP hosts
// register with the first challenge's scope); the registration response
// reports the effective default. A pre-registered client's AllowedScopes is
// a ceiling. Refusals say which limit was hit.
func TestClientScopes(t *testing.T) {
	t.Parallel()
	host := newCIMDHostWith(t, map[string]string{
		"/scoped.json": cimdDoc("https://client.example.com/scoped.json", `,"scope":"mcp:read unknown"`),
	})
	h := newHarness(t, "", func(c *Config) {
		c.ClientMetadata = host.resolver(t, nil)
		c.DefaultScopes = []string{"mcp:write"}
		c.Clients = append(c.Clients,
			Client{ID: ceilingID, RedirectURIs: []string{publicCB}, AllowedScopes: []string{"mcp:read", "mcp:write"}},
			Client{ID: defaultsID, RedirectURIs: []string{publicCB}, DefaultScopes: []string{"mcp:read", "mcp:admin"}})
	})
	register := func(scope string) (string, string) {
		body := `{"redirect_uris":["` + publicCB + `"],"token_endpoint_auth_method":"none"`
		if scope != "" {
			body += `,"scope":"` + scope + `"`
		}
		info := h.register(t, body+`}`)
		return info.ClientID, info.Scope
	}
	narrow, narrowScope := register("mcp:read")
	capped, cappedScope := register("mcp:read unknown mcp:read")
	unscoped, unscopedScope := register("")
	onlyUnknown, onlyUnknownScope := register("unknown")
	for _, tt := range []struct{ name, got, want string }{
		{"registered scope echoed", narrowScope, "mcp:read"},
		{"unsupported scope dropped", cappedScope, "mcp:read"},
		{"no scope: the server default", unscopedScope, "mcp:write"},
		{"only unsupported scopes: the server default", onlyUnknownScope, "mcp:write"},
	} {
		if tt.got != tt.want {
			t.Errorf("registration response, %s: scope %q, want %q", tt.name, tt.got, tt.want)
		}
	}

	const cimd = "https://client.example.com/scoped.json"
	tests := []struct {
		name, client, redirect, scope string
		want                          scopeOutcome
	}{
		{"DCR: no scope gets the registered one", narrow, publicCB, "", scopeOutcome{granted: "mcp:read"}},
		{"DCR: step-up beyond the registered scope", narrow, publicCB, "mcp:read mcp:admin", scopeOutcome{granted: "mcp:read mcp:admin"}},
		{"DCR: another supported scope", narrow, publicCB, "mcp:write", scopeOutcome{granted: "mcp:write"}},
		{"DCR: unsupported scope", narrow, publicCB, "mcp:read root", scopeOutcome{code: "invalid_scope", desc: "scope not supported: root"}},
		{"DCR capped: no scope gets the supported part", capped, publicCB, "", scopeOutcome{granted: "mcp:read"}},
		{"DCR without scope: server default", unscoped, publicCB, "", scopeOutcome{granted: "mcp:write"}},
		{"DCR without scope: step-up", unscoped, publicCB, "mcp:admin", scopeOutcome{granted: "mcp:admin"}},
		{"DCR only unsupported: server default", onlyUnknown, publicCB, "", scopeOutcome{granted: "mcp:write"}},
		{"CIMD: no scope gets the document's supported scope", cimd, cimdCB, "", scopeOutcome{granted: "mcp:read"}},
		{"CIMD: step-up beyond the document's scope", cimd, cimdCB, "mcp:read mcp:admin", scopeOutcome{granted: "mcp:read mcp:admin"}},
		{"CIMD: unsupported scope", cimd, cimdCB, "unknown", scopeOutcome{code: "invalid_scope", desc: "scope not supported: unknown"}},
		{"pre-registered ceiling: within", ceilingID, publicCB, "mcp:read mcp:write", scopeOutcome{granted: "mcp:read mcp:write"}},
		{"pre-registered ceiling: beyond", ceilingID, publicCB, "mcp:read mcp:admin", scopeOutcome{code: "invalid_scope", desc: "scope not allowed for this client: mcp:admin"}},
		{"pre-registered ceiling: unsupported", ceilingID, publicCB, "root", scopeOutcome{code: "invalid_scope", desc: "scope not supported: root"}},
		{"pre-registered ceiling: server default within it", ceilingID, publicCB, "", scopeOutcome{granted: "mcp:write"}},
		{"pre-registered defaults", defaultsID, publicCB, "", scopeOutcome{granted: "mcp:read mcp:admin"}},
		{"pre-registered defaults are no ceiling", defaultsID, publicCB, "mcp:write", scopeOutcome{granted: "mcp:write"}},
		{"pre-registered without scopes: server default", publicID, publicCB, "", scopeOutcome{granted: "mcp:write"}},
		{"malformed scope", narrow, publicCB, `mcp:read "x"`, scopeOutcome{code: "invalid_scope", desc: "malformed scope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := h.authorizeScope(t, tt.client, tt.redirect, tt.scope); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestClientScopesConfig: a pre-registered client's scope settings must be
// within scopes_supported, and its defaults within its ceiling.
func TestClientScopesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client Client
		want   string // substring of the error; "" means accepted
	}{
		{"ceiling within Scopes", Client{AllowedScopes: []string{"mcp:read"}, DefaultScopes: []string{"mcp:read"}}, ""},
		{"ceiling outside Scopes", Client{AllowedScopes: []string{"mcp:read", "root"}}, "AllowedScopes"},
		{"default outside Scopes", Client{DefaultScopes: []string{"root"}}, "DefaultScopes"},
		{"default outside the ceiling", Client{AllowedScopes: []string{"mcp:read"}, DefaultScopes: []string{"mcp:write"}}, "DefaultScopes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.client
			c.ID, c.RedirectURIs = "app", []string{publicCB}
			_, err := New(Config{Issuer: "https://as.example.com", Scopes: []string{"mcp:read", "mcp:write"}, Clients: []Client{c}})
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want error containing %q", err, tt.want)
			}
		})
	}
}

// TestRegistrationScopeMalformed: a scope that is not a space-separated
// list of scope tokens is refused, not silently dropped.
func TestRegistrationScopeMalformed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	resp, body := h.postJSON(pathRegister, `{"redirect_uris":["`+publicCB+`"],"scope":"mcp:read \"x\""}`)
	e, err := oauthmeta.ParseError(body)
	if resp.StatusCode != http.StatusBadRequest || err != nil || e.Code != oauthmeta.CodeInvalidClientMetadata {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
}
