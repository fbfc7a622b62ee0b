package authserver

import "fmt"

// AllowList says which upstream users may log in: a user is admitted when
// any non-empty list matches. Email rules need a verified email unless
// InsecureAllowUnverifiedEmail is set.
//
// Every entry is parsed when the server starts, and one that does not
// parse is a configuration error. The user's email is parsed by the same
// rules at each login; an address they refuse (two "@", a NUL, "%", a
// quoted or non-ASCII local part, a domain that is not an ASCII domain
// name, …) is no email at all for matching, so that
// "attacker@evil.com@example.com" is at no domain, while the user can
// still be admitted by "sub" or group. See the README for the exact
// rules. No comparison folds Unicode: "boſſ@partner.org" (U+017F) is not
// "boss@partner.org", nor "exаmple.com" (Cyrillic а) "example.com".
type AllowList struct {
	// EmailDomains admits users whose email is at one of these domain
	// names (ASCII letters, digits and hyphens, at least two labels, no
	// trailing dot), compared without regard to ASCII case: exactly the
	// domain, so "example.com" admits neither "sub.example.com" nor
	// "badexample.com".
	EmailDomains []string
	// Users admits these users, by email or by the provider's "sub". An
	// entry with an "@" is an email and matches only the email claim
	// (verified, as above), without regard to ASCII case in either part:
	// at providers whose "sub" is a username or an unverified email, a user
	// could otherwise pick the "sub" "alice@example.com" and pass for
	// Alice. Any other entry is a "sub", matched exactly (case-sensitive).
	Users []string
	// Groups admits members of any of these groups (exact,
	// case-sensitive match), as listed in the ID token's groups claim.
	Groups []string
	// AllowAnyUser admits every user the provider authenticates. It must
	// be set explicitly when the lists above are all empty.
	AllowAnyUser bool
	// InsecureAllowUnverifiedEmail lets EmailDomains and Users match an
	// email the provider does not mark "email_verified": true. False (the
	// zero value) means such an email matches nothing, since at many
	// providers users type any address they like.
	InsecureAllowUnverifiedEmail bool
}

func (a *AllowList) empty() bool {
	return len(a.EmailDomains) == 0 && len(a.Users) == 0 && len(a.Groups) == 0
}

// allowRules is a parsed AllowList.
type allowRules struct {
	anyUser bool
	rules   *identityRules[struct{}]
}

// compileAllowList parses a's entries; an entry that does not parse is a
// configuration error.
func compileAllowList(a *AllowList) (*allowRules, error) {
	r := &allowRules{anyUser: a.AllowAnyUser, rules: newIdentityRules[struct{}]()}
	for _, l := range []struct {
		field   string
		entries []string
		add     func(string, struct{}) (bool, error)
	}{
		{"Users", a.Users, r.rules.addUser},
		{"Groups", a.Groups, r.rules.addGroup},
		{"EmailDomains", a.EmailDomains, r.rules.addDomain},
	} {
		for i, e := range l.entries {
			if _, err := l.add(e, struct{}{}); err != nil {
				return nil, configErr(fmt.Sprintf("Allow.%s[%d]", l.field, i), err.Error())
			}
		}
	}
	return r, nil
}

// admits reports whether the user k passes the allow-list.
func (r *allowRules) admits(k *userKeys) bool {
	found := r.anyUser
	r.rules.match(k, func(struct{}) { found = true })
	return found
}
