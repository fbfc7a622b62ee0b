package upstream

import (
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestUpstreamGroupOverage: when the provider says the user's groups are
// elsewhere (Entra ID's group overage), a login that a group rule could
// decide is refused with the reason, never read as "not a member"; without
// group rules, or when the user is admitted otherwise and no grant policy
// names a group, the login proceeds. A groups claim that is present is
// read as before.
func TestUpstreamGroupOverage(t *testing.T) {
	overage := func(c map[string]any) {
		delete(c, "groups")
		c["_claim_names"] = map[string]any{"groups": "src1"}
		c["_claim_sources"] = map[string]any{"src1": map[string]any{
			"endpoint": "https://graph.microsoft.com/v1.0/users/alice-123/getMemberObjects"}}
	}
	hasGroups := func(c map[string]any) { delete(c, "groups"); c["hasgroups"] = true }
	groupPolicy := &authserver.GrantPolicy{Groups: map[string][]string{"staff": {"mcp:read"}}}
	domainPolicy := &authserver.GrantPolicy{EmailDomains: map[string][]string{"example.com": {"mcp:read"}}}
	for _, tc := range []struct {
		name    string
		claims  func(c map[string]any)
		allow   authserver.AllowList
		policy  *authserver.GrantPolicy
		overage bool // refused for group overage; else admitted
	}{
		{"overage, group allow-list", overage, authserver.AllowList{Groups: []string{"staff"}}, nil, true},
		{"hasgroups, group allow-list", hasGroups, authserver.AllowList{Groups: []string{"staff"}}, nil, true},
		{"overage, group grant policy", overage, authserver.AllowList{EmailDomains: []string{"example.com"}}, groupPolicy, true},
		{"overage, any user, group grant policy", overage, authserver.AllowList{AllowAnyUser: true}, groupPolicy, true},
		{"overage, not admitted otherwise", overage, authserver.AllowList{Groups: []string{"staff"}, EmailDomains: []string{"example.org"}}, nil, true},
		{"overage, no group rule", overage, authserver.AllowList{EmailDomains: []string{"example.com"}}, domainPolicy, false},
		{"overage, admitted by email despite a group entry", overage,
			authserver.AllowList{Groups: []string{"staff"}, EmailDomains: []string{"example.com"}}, nil, false},
		{"groups claim present", func(c map[string]any) {}, authserver.AllowList{Groups: []string{"staff"}}, groupPolicy, false},
		{"groups claim present with a reference to more", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": "src1"}
		}, authserver.AllowList{Groups: []string{"staff"}}, groupPolicy, false},
		{"another claim distributed", func(c map[string]any) {
			delete(c, "groups")
			c["_claim_names"] = map[string]any{"roles": "src1"}
		}, authserver.AllowList{Groups: []string{"staff"}, EmailDomains: []string{"example.com"}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := upstreamHarness(t, func(c *testConfig) {
				c.Upstream.Allow, c.Upstream.GrantPolicy = tc.allow, tc.policy
			})
			p.set(func(p *fakeProvider) {
				p.claims = func(req url.Values) map[string]any {
					c := p.defaultClaims(req)
					tc.claims(c)
					return c
				}
			})
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			q.Set("scope", "mcp:read")
			loc := location(t, b.login(q))
			const reason = "group overage: configure group filtering or app roles at the provider"
			if !tc.overage {
				if loc.Query().Get("code") == "" || strings.Contains(h.logs.String(), reason) {
					t.Fatalf("got %s, want admitted; logs: %s", loc, h.logs)
				}
				return
			}
			if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" ||
				!strings.Contains(loc.Query().Get("error_description"), reason) {
				t.Fatalf("got %s, want access_denied for group overage", loc)
			}
			if !strings.Contains(h.logs.String(), reason) {
				t.Errorf("the reason is not logged: %s", h.logs)
			}
		})
	}
}
