package authserver

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The rules every identity-matching test below runs through both the
// allow-list and the grant policy: each entry allows the scope that says
// which rule it is.
var (
	matchAllow = AllowList{
		EmailDomains: []string{"example.com"},
		Users:        []string{"boss@partner.org", "u-42"},
		Groups:       []string{"mcp-users"},
	}
	matchPolicy = &GrantPolicy{
		EmailDomains: map[string][]string{"example.com": {"by:domain"}},
		Users:        map[string][]string{"boss@partner.org": {"by:email"}, "u-42": {"by:sub"}},
		Groups:       map[string][]string{"mcp-users": {"by:group"}},
	}
	matchScopes = []string{"by:domain", "by:email", "by:sub", "by:group"}
)

// identityMatchCases are upstream users and the rules of matchAllow and
// matchPolicy they match: the attacks on address parsing of
// CVE-2026-40574 and on Unicode case folding, and the ordinary cases next
// to them. The provider marks every email verified unless unverified.
var identityMatchCases = []identityMatchCase{
	{name: "domain", email: "alice@example.com", want: []string{"by:domain"}},
	{name: "domain in upper case", email: "x@EXAMPLE.com", want: []string{"by:domain"}},
	{name: "address in mixed case", email: "Alice@Example.Com", want: []string{"by:domain"}},
	{name: "two @, domain after the last", email: "attacker@evil.com@example.com"},
	{name: "NUL then another domain", email: "a@example.com\x00@evil.com"},
	{name: "NUL before the allowed domain", email: "attacker@evil.com\x00@example.com"},
	{name: "NUL at the end", email: "alice@example.com\x00"},
	{name: "percent-encoded NUL", email: "attacker@evil.com%00@example.com"},
	{name: "percent-encoded @", email: "a%40evil.com@example.com"},
	{name: "percent source route", email: "a%evil.com@example.com"},
	{name: "quoted local part with @", email: `"a@b"@example.com`},
	{name: "space in local part", email: "a @example.com"},
	{name: "trailing space", email: "alice@example.com "},
	{name: "CRLF", email: "alice@example.com\r\n"},
	{name: "Cyrillic а in domain", email: "x@exаmple.com"},
	{name: "domain with trailing dot", email: "alice@example.com."},
	{name: "subdomain", email: "alice@sub.example.com"},
	{name: "suffix domain", email: "alice@badexample.com"},
	{name: "unverified", email: "alice@example.com", unverified: true},
	{name: "user by email", email: "boss@partner.org", want: []string{"by:email"}},
	{name: "user by email, ASCII case folded", email: "BOSS@PARTNER.ORG", want: []string{"by:email"}},
	{name: "long s (U+017F) folds to s in Unicode only", email: "boſſ@partner.org"},
	{name: "Kelvin sign (U+212A)", email: "\u212Aboss@partner.org"},
	{name: "user by email at another domain", email: "boss@partner.org.evil.com"},
	{name: "sub", sub: "u-42", want: []string{"by:sub"}},
	{name: "sub still matches beside a refused email", sub: "u-42", email: "attacker@evil.com@example.com", want: []string{"by:sub"}},
	{name: "sub is case-sensitive", sub: "U-42"},
	{name: "sub with @ never matches an email entry", sub: "boss@partner.org"},
	{name: "group", groups: []string{"mcp-users"}, want: []string{"by:group"}},
	{name: "group is case-sensitive", groups: []string{"MCP-Users"}},
	{name: "group with a Unicode hyphen", groups: []string{"mcp\u2010users"}},
	{name: "group and domain", email: "alice@example.com", groups: []string{"mcp-users"}, want: []string{"by:domain", "by:group"}},
}

type identityMatchCase struct {
	name, sub, email string // sub "" means "s-1"
	groups           []string
	unverified       bool
	want             []string // the rules matched; nil: refused
}

func (tc *identityMatchCase) identity() *UpstreamIdentity {
	return &UpstreamIdentity{Issuer: "https://idp.example", Subject: cmp.Or(tc.sub, "s-1"), Email: tc.email,
		EmailVerified: !tc.unverified, Groups: tc.groups}
}

// matchBoth runs id through matchAllow and matchPolicy.
func matchBoth(t *testing.T, id *UpstreamIdentity) (admitted bool, allowed []string) {
	t.Helper()
	allow, err := compileAllowList(&matchAllow)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := compileGrantPolicy(matchPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := keysOf(id, false)
	return allow.admits(k), policy.allowed(k)
}

// TestIdentityMatchAttacks: the allow-list and the grant policy read every
// address the same way: exactly one "@", no NUL, "%", quotes, spaces or
// non-ASCII characters, a domain that is an ASCII domain name compared
// without regard to ASCII case, no Unicode case folding anywhere, and
// identifiers and groups compared exactly.
func TestIdentityMatchAttacks(t *testing.T) {
	for _, tc := range identityMatchCases {
		t.Run(tc.name, func(t *testing.T) {
			admitted, allowed := matchBoth(t, tc.identity())
			slices.Sort(allowed)
			want := slices.Sorted(slices.Values(tc.want))
			if admitted != (len(tc.want) > 0) || !slices.Equal(allowed, want) {
				t.Fatalf("allow-list admits %v, grant policy allows %q; want rules %q", admitted, allowed, tc.want)
			}
		})
	}
}

// TestIdentityMatchLogin: the same table through the whole login at a
// provider that sends these claims in a verified ID token: with the rules
// as the allow-list, a user they do not match gets access_denied; with
// them as the grant policy (and every user admitted), the token carries
// the scopes of the rules that match, and a user matching none gets
// access_denied.
func TestIdentityMatchLogin(t *testing.T) {
	for _, mode := range []string{"allow-list", "grant policy"} {
		h, p := upstreamHarness(t, func(c *Config) {
			c.Scopes = append(c.Scopes, matchScopes...)
			if mode == "allow-list" {
				c.Allow = matchAllow
			} else {
				c.Allow = AllowList{AllowAnyUser: true}
				c.GrantPolicy = matchPolicy
			}
		})
		for _, tc := range identityMatchCases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				p.setIdentity(tc.identity())
				q, verifier := authParams(publicID, publicCB)
				scope := "mcp:read"
				if mode == "grant policy" {
					scope = strings.Join(matchScopes, " ")
				}
				q.Set("scope", scope)
				loc := location(t, newBrowser(t, h).login(q))
				if len(tc.want) == 0 {
					if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
						t.Fatalf("got %s, want access_denied", loc)
					}
					return
				}
				res := h.exchange(loc.Query().Get("code"), verifier, publicCB, nil)
				if res.tok == nil {
					t.Fatalf("token: %d %s (redirect %s)", res.status, res.body, loc)
				}
				wantScope := "mcp:read"
				if mode == "grant policy" {
					wantScope = strings.Join(slices.DeleteFunc(slices.Clone(matchScopes), func(s string) bool { return !slices.Contains(tc.want, s) }), " ")
				}
				if res.tok.Scope != wantScope {
					t.Fatalf("token scope %q, want %q", res.tok.Scope, wantScope)
				}
			})
		}
	}
}

// TestIdentityRulesAtStart: an allow-list or grant policy entry that is
// not an accepted address, domain name, identifier or group name is a
// configuration error, the same for both, instead of a rule that matches
// what the attacks of TestIdentityMatchAttacks send or silently nothing.
func TestIdentityRulesAtStart(t *testing.T) {
	tests := []struct {
		kind, entry string // kind: user, domain or group
		ok          bool
	}{
		{"user", "boss@partner.org", true},
		{"user", "BOSS@Partner.ORG", true},
		{"user", "u-42", true},
		{"user", "583231", true},
		{"user", "attacker@evil.com@example.com", false},
		{"user", "a@example.com\x00@evil.com", false},
		{"user", "a%40evil.com@example.com", false},
		{"user", `"a@b"@example.com`, false},
		{"user", "a @example.com", false},
		{"user", "boſſ@partner.org", false},
		{"user", "x@exаmple.com", false},
		{"user", "@example.com", false},
		{"user", "boss@", false},
		{"user", "boss@partner.org.", false},
		{"user", "boss@partner", false},
		{"user", " u-42", false},
		{"user", "u-42\x00", false},
		{"user", "", false},
		{"domain", "example.com", true},
		{"domain", "EXAMPLE.com", true},
		{"domain", "xn--bcher-kva.example", true},
		{"domain", "exаmple.com", false},
		{"domain", "bücher.example", false},
		{"domain", "example.com.", false},
		{"domain", "@example.com", false},
		{"domain", "evil.com@example.com", false},
		{"domain", "*.example.com", false},
		{"domain", "example", false},
		{"domain", "192.0.2.1", false},
		{"domain", "[192.0.2.1]", false},
		{"domain", "exa mple.com", false},
		{"domain", "example.com\x00", false},
		{"domain", "-example.com", false},
		{"domain", "", false},
		{"group", "mcp-users", true},
		{"group", "Équipe Ops", true},
		{"group", " mcp-users", false},
		{"group", "mcp\x00users", false},
		{"group", "\xff", false},
		{"group", "", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %q", tc.kind, tc.entry), func(t *testing.T) {
			var allow AllowList
			policy := &GrantPolicy{}
			entry := map[string][]string{tc.entry: {"mcp:read"}}
			switch tc.kind {
			case "user":
				allow.Users, policy.Users = []string{tc.entry}, entry
			case "domain":
				allow.EmailDomains, policy.EmailDomains = []string{tc.entry}, entry
			case "group":
				allow.Groups, policy.Groups = []string{tc.entry}, entry
			}
			_, errAllow := New(Config{Issuer: "https://as.example", Consent: ConsentPrompt, Login: newFakeLogin(), Allow: allow})
			_, errPolicy := New(Config{Issuer: "https://as.example", Consent: ConsentPrompt, Scopes: []string{"mcp:read"},
				Login: newFakeLogin(), Allow: AllowList{AllowAnyUser: true}, GrantPolicy: policy})
			if tc.ok {
				if errAllow != nil || errPolicy != nil {
					t.Fatalf("refused: allow-list %v, grant policy %v", errAllow, errPolicy)
				}
				return
			}
			if !errors.Is(errAllow, ErrConfig) || !errors.Is(errPolicy, ErrConfig) {
				t.Fatalf("accepted: allow-list %v, grant policy %v; want ConfigErrors", errAllow, errPolicy)
			}
		})
	}
}
