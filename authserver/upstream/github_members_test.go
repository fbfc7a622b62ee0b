package upstream

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// manyOrgs returns n organisation logins, last at the end.
func manyOrgs(n int, last string) []string {
	out := make([]string, 0, n)
	for i := range n - 1 {
		out = append(out, fmt.Sprintf("org-%d", i))
	}
	return append(out, last)
}

// TestUpstreamGitHubAllow: with GitHubAllow only members of the listed
// organisations or teams log in, read from the GitHub fake's /user/orgs
// and /user/teams page by page; every failure refuses, none admits.
func TestUpstreamGitHubAllow(t *testing.T) {
	acme := &GitHubAllow{Orgs: []string{"acme"}}
	platform := &GitHubAllow{Teams: []string{"acme/platform"}}
	octocat := func(orgs, teams []string) *oauthtest.GitHubUser {
		return &oauthtest.GitHubUser{ID: 583231, Login: "octocat", Orgs: orgs, Teams: teams,
			Emails: []oauthtest.GitHubEmail{{Email: "octocat@example.com", Primary: true, Verified: true}}}
	}
	tests := []struct {
		name   string
		rule   *GitHubAllow
		allow  *authserver.AllowList
		user   *oauthtest.GitHubUser
		faults oauthtest.GitHubFaults
		want   string // the error the MCP client gets; "" means a code
		reason string // what the log says
	}{
		{name: "org member", rule: acme, user: octocat([]string{"other", "acme"}, nil)},
		{name: "team member", rule: platform, user: octocat(nil, []string{"acme/ops", "acme/platform"})},
		{name: "org or team", rule: &GitHubAllow{Orgs: []string{"umbrella"}, Teams: []string{"acme/platform"}}, user: octocat([]string{"acme"}, []string{"acme/platform"})},
		{name: "non-member", rule: acme, user: octocat([]string{"other"}, nil), want: "access_denied", reason: "not a member"},
		{name: "no memberships", rule: acme, user: octocat(nil, nil), want: "access_denied", reason: "not a member"},
		{name: "org member, not in team", rule: platform, user: octocat([]string{"acme"}, []string{"acme/ops", "other/platform"}), want: "access_denied", reason: "not a member"},
		{name: "rule upper case", rule: &GitHubAllow{Orgs: []string{"ACME"}}, user: octocat([]string{"acme"}, nil)},
		{name: "answer upper case", rule: acme, user: octocat([]string{"AcMe"}, nil)},
		{name: "team mixed case", rule: &GitHubAllow{Teams: []string{"Acme/Platform"}}, user: octocat(nil, []string{"ACME/platform"})},
		{name: "Cyrillic org", rule: acme, user: octocat([]string{"a\u0441me"}, nil), want: "access_denied", reason: "organisation login"},
		{name: "Kelvin sign", rule: &GitHubAllow{Orgs: []string{"kk"}}, user: octocat([]string{"k\u212a"}, nil), want: "access_denied", reason: "organisation login"},
		{name: "api 500", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersStatus: 500}, want: "temporarily_unavailable", reason: "github/orgs"},
		{name: "api 403", rule: platform, user: octocat(nil, []string{"acme/platform"}), faults: oauthtest.GitHubFaults{MembersStatus: 403}, want: "access_denied", reason: "github/teams"},
		{name: "api slow", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersSlow: true}, want: "temporarily_unavailable", reason: "github/orgs"},
		{name: "oversized", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersBody: `[{"login":"acme","pad":"` + strings.Repeat("a", maxGitHubPageBytes) + `"}]`},
			want: "access_denied", reason: "exceeds"},
		{name: "not an array", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersBody: `{"login":"acme"}`}, want: "access_denied", reason: "github/orgs"},
		{name: "login not a string", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersBody: `[{"login":1}]`}, want: "access_denied", reason: "github/orgs"},
		{name: "duplicate member", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{MembersBody: `[{"login":"other","login":"acme"}]`}, want: "access_denied", reason: "duplicate"},
		{name: "team without organisation", rule: platform, user: octocat(nil, []string{"acme/platform"}), faults: oauthtest.GitHubFaults{MembersBody: `[{"slug":"platform"}]`}, want: "access_denied", reason: "well-formed"},
		{name: "read:org not granted", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{TokenScope: "read:user,user:email"}, want: "access_denied", reason: "not granted read:org"},
		{name: "admin:org granted", rule: acme, user: octocat([]string{"acme"}, nil), faults: oauthtest.GitHubFaults{TokenScope: "read:user,user:email,admin:org"}},
		{name: "third page", rule: acme, user: octocat(manyOrgs(250, "acme"), nil)},
		{name: "beyond the page bound", rule: acme, user: octocat(append([]string{"acme"}, manyOrgs(maxGitHubPages*githubPerPage, "last")...), nil),
			want: "access_denied", reason: "more than 10 pages"},
		{name: "exactly the bound", rule: acme, user: octocat(manyOrgs(maxGitHubPages*githubPerPage, "acme"), nil), want: "access_denied", reason: "more than 10 pages"},
		{name: "team as group", rule: &GitHubAllow{Teams: []string{"acme/platform", "acme/ops"}}, allow: &authserver.AllowList{Groups: []string{"acme/platform"}},
			user: octocat(nil, []string{"ACME/Platform"})},
		{name: "other team not the group", rule: &GitHubAllow{Teams: []string{"acme/platform", "acme/ops"}}, allow: &authserver.AllowList{Groups: []string{"acme/platform"}},
			user: octocat(nil, []string{"acme/ops"}), want: "access_denied", reason: "refused by the allow-list"},
		{name: "org as group", rule: acme, allow: &authserver.AllowList{Groups: []string{"acme"}}, user: octocat([]string{"Acme"}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, g := githubHarness(t, func(c *testConfig) {
				c.Upstream.OAuth2.GitHubAllow = tc.rule
				if tc.allow != nil {
					c.Upstream.Allow = *tc.allow
				}
			})
			g.SetUser(*tc.user)
			g.SetFaults(tc.faults)
			q, _ := authParams(publicID, publicCB)
			loc := location(t, newBrowser(t, h).login(q))
			if got := loc.Query().Get("error"); got != tc.want || (tc.want == "") != (loc.Query().Get("code") != "") {
				t.Fatalf("got %s, want error %q; logs: %s", loc, tc.want, h.logs.String())
			}
			if logs := h.logs.String(); tc.reason != "" && !strings.Contains(logs, tc.reason) {
				t.Errorf("refused, but not because %q: %s", tc.reason, logs)
			}
			for _, p := range g.BearerPaths() {
				if !slices.Contains([]string{"/api/user", "/api/user/emails", "/api/user/orgs", "/api/user/teams"}, p) {
					t.Errorf("bearer token sent to %s", p)
				}
			}
		})
	}
}

// TestUpstreamGitHubAllowScope: a membership rule asks GitHub for read:org
// besides the configured scopes.
func TestUpstreamGitHubAllowScope(t *testing.T) {
	h, _ := githubHarness(t, func(c *testConfig) { c.Upstream.OAuth2.GitHubAllow = &GitHubAllow{Orgs: []string{"acme"}} })
	q, _ := authParams(publicID, publicCB)
	if got := newBrowser(t, h).toUpstream(q).Query().Get("scope"); got != "read:user user:email read:org" {
		t.Errorf("scope %q, want read:org added", got)
	}
	p, _ := Preset(PresetGitHub, "")
	if p.OAuth2.GitHubAllow != nil || slices.Contains(p.Scopes, githubOrgScope) {
		t.Errorf("the preset alone has a membership rule: %+v %v", p.OAuth2.GitHubAllow, p.Scopes)
	}
}

func TestUpstreamGitHubAllowConfigErrors(t *testing.T) {
	for name, rule := range map[string]*GitHubAllow{
		"empty":            {},
		"empty org":        {Orgs: []string{""}},
		"Cyrillic org":     {Orgs: []string{"a\u0441me"}},
		"org with slash":   {Orgs: []string{"acme/platform"}},
		"org too long":     {Orgs: []string{strings.Repeat("a", 40)}},
		"double hyphen":    {Orgs: []string{"ac--me"}},
		"team without org": {Teams: []string{"platform"}},
		"team empty slug":  {Teams: []string{"acme/"}},
		"team with space":  {Teams: []string{"acme/plat form"}},
		"team two slashes": {Teams: []string{"acme/a/b"}},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := Preset(PresetGitHub, "")
			p.ClientID, p.OAuth2.GitHubAllow = "c", rule
			if _, err := New(*p); !errors.Is(err, authserver.ErrConfig) {
				t.Fatalf("New: %v, want a ConfigError", err)
			}
		})
	}
	// The caller's lists are copied: changing them later changes nothing.
	orgs := []string{"acme"}
	p, _ := Preset(PresetGitHub, "")
	p.ClientID, p.OAuth2.GitHubAllow = "c", &GitHubAllow{Orgs: orgs}
	prov, err := New(*p)
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	orgs[0] = "evil"
	if got := prov.(*oauth2Provider).endpoints.GitHubAllow.Orgs; !slices.Equal(got, []string{"acme"}) {
		t.Errorf("rules changed with the caller's slice: %v", got)
	}
}
