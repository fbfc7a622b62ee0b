package authserver

import (
	"fmt"
	"strings"

	"github.com/mcpauth/mcpauth/internal/identity"
)

// identityRules are the entries of the allow-list or of the grant policy,
// each with its value, parsed at start-up by the rules of
// internal/identity; both match an upstream user through match, so the
// two never read an address or compare a name differently.
//
// An entry naming a user is an email address when it has an "@" and the
// provider's user identifier otherwise. Addresses and domains are kept
// lower-cased (ASCII only) and looked up exactly; user identifiers and
// group names are looked up byte for byte, never folded or normalised.
type identityRules[V any] struct {
	subs, groups, emails, domains map[string]V
}

func newIdentityRules[V any]() *identityRules[V] {
	return &identityRules[V]{subs: map[string]V{}, groups: map[string]V{}, emails: map[string]V{}, domains: map[string]V{}}
}

// addUser adds an entry naming a user. It reports whether the entry's key
// was there already ("Bob@Example.com" after "bob@example.com"), in which
// case v replaces the earlier value.
func (r *identityRules[V]) addUser(entry string, v V) (dup bool, err error) {
	if strings.Contains(entry, "@") {
		e, err := identity.ParseEmail(entry)
		if err != nil {
			return false, fmt.Errorf("%.80q is not an accepted email address: %w", entry, err)
		}
		return put(r.emails, e.String(), v), nil
	}
	if err := identity.CheckName(entry); err != nil {
		return false, fmt.Errorf("%.80q is not a user identifier: %w", entry, err)
	}
	return put(r.subs, entry, v), nil
}

// addGroup adds an entry naming a group, as addUser.
func (r *identityRules[V]) addGroup(entry string, v V) (dup bool, err error) {
	if err := identity.CheckName(entry); err != nil {
		return false, fmt.Errorf("%.80q is not a group name: %w", entry, err)
	}
	return put(r.groups, entry, v), nil
}

// addDomain adds an entry naming an email domain, as addUser.
func (r *identityRules[V]) addDomain(entry string, v V) (dup bool, err error) {
	d, err := identity.ParseDomain(entry)
	if err != nil {
		return false, fmt.Errorf("%.80q is not an accepted domain name: %w", entry, err)
	}
	return put(r.domains, d, v), nil
}

func put[V any](m map[string]V, k string, v V) (dup bool) {
	_, dup = m[k]
	m[k] = v
	return dup
}

// hasGroups reports whether an entry names a group.
func (r *identityRules[V]) hasGroups() bool { return len(r.groups) > 0 }

// match calls f with the value of each entry k matches: its user
// identifier, each of its groups, its email address and that address's
// domain.
func (r *identityRules[V]) match(k *userKeys, f func(V)) {
	if v, ok := r.subs[k.sub]; ok {
		f(v)
	}
	for _, g := range k.groups {
		if v, ok := r.groups[g]; ok {
			f(v)
		}
	}
	if k.email.IsZero() {
		return
	}
	if v, ok := r.emails[k.email.String()]; ok {
		f(v)
	}
	if v, ok := r.domains[k.email.Domain()]; ok {
		f(v)
	}
}

// userKeys is what the rules match of an upstream user, read once per
// login by keysOf.
type userKeys struct {
	sub    string   // "" (never an entry) when the provider's has an "@"
	groups []string // as the provider listed them
	// email is the user's address when it is verified (or unverified ones
	// are allowed) and accepted by identity.ParseEmail; zero otherwise.
	email identity.Email
	// emailRefused says the provider sent a verified (or allowed)
	// address that identity.ParseEmail refused, for the log.
	emailRefused bool
}

// keysOf returns what the rules match of id. A provider's user identifier
// with an "@" matches no entry: entries with an "@" are email addresses,
// and at providers whose "sub" is a name the user chose, a user could
// otherwise pick "alice@example.com". An email that is not verified
// (unless unverifiedOK) or not an accepted address matches nothing; the
// user can still be matched by identifier and groups.
func keysOf(id *UpstreamIdentity, unverifiedOK bool) *userKeys {
	k := &userKeys{groups: id.Groups}
	if !strings.Contains(id.Subject, "@") {
		k.sub = id.Subject
	}
	if id.Email != "" && (id.EmailVerified || unverifiedOK) {
		var err error
		k.email, err = identity.ParseEmail(id.Email)
		k.emailRefused = err != nil
	}
	return k
}
