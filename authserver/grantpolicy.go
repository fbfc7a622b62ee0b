package authserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// GrantPolicy says which MCP scopes each upstream user may obtain. After
// the upstream login and the allow-list, the user's allowed scopes are the
// union of Default and of every entry that matches them; the authorization
// then carries the requested scopes that are allowed (requested ∩
// allowed), and the token response's "scope" says which those are (RFC
// 6749 §3.3). The MCP client gets access_denied, with "state" and "iss",
// instead of a code when
//
//   - the user is allowed no scope at all,
//   - the request named scopes and none of them is allowed, or
//   - a requested scope listed in Required is not allowed.
//
// Required is for the scopes a client asks for on a step-up (MCP's 403
// insufficient_scope): a refused step-up then ends with access_denied,
// instead of a narrowed token that draws the same 403 again.
//
// The policy is applied when the user logs in, so a new authorization
// (a step-up included) always meets the current policy. A refresh can only
// narrow a grant (RFC 6749 §6), and it also drops the scopes that no entry
// of the current policy allows anyone; a change that narrows what one user
// or group may have (while others keep the scope) applies from that user's
// next login, so grants issued before it last at most
// [Config.RefreshTokenTTL].
//
// The JSON form, read by [ParseGrantPolicy] (mcpauth authserver
// --grant-policy FILE), is
//
//	{"default": ["mcp:read"],
//	 "users": {"alice@example.com": ["mcp:write"], "583231": ["mcp:admin"]},
//	 "groups": {"mcp-admins": ["mcp:admin", "mcp:write"]},
//	 "email_domains": {"example.com": ["mcp:write"]},
//	 "required": ["mcp:admin"]}
//
// Entries are parsed and matched exactly as those of [AllowList]. Users
// entries match like [AllowList.Users]: an entry with "@" is an email
// (ASCII case-insensitive, verified unless
// AllowList.InsecureAllowUnverifiedEmail), any other is the provider's
// user identifier ("sub", or the IDField of a plain OAuth 2.0 provider: at
// GitHub the numeric id, never the login), matched exactly. Groups match
// the groups claim exactly, and email domains match the domain of a
// verified email exactly, without regard to ASCII case. A user's email
// that is not an accepted address matches no users or email_domains
// entry.
type GrantPolicy struct {
	// Default is allowed to every admitted user.
	Default []string `json:"default,omitempty"`
	// Users maps a user (email or identifier) to scopes.
	Users map[string][]string `json:"users,omitempty"`
	// Groups maps a group to scopes its members may obtain.
	Groups map[string][]string `json:"groups,omitempty"`
	// EmailDomains maps an email domain to scopes.
	EmailDomains map[string][]string `json:"email_domains,omitempty"`
	// Required lists scopes that are never narrowed away: a request for one
	// of them that the user may not have is refused with access_denied.
	Required []string `json:"required,omitempty"`
}

// ParseGrantPolicy decodes a grant policy from its JSON form strictly: one
// object, names matched case-sensitively, duplicate names, unknown names,
// two entries for one email or domain (in different case), and entries
// that are not accepted addresses, domain names, identifiers or group
// names (as for [AllowList]) refused, so a misspelt rule never goes
// unenforced. Errors match [ErrConfig].
func ParseGrantPolicy(data []byte) (*GrantPolicy, error) {
	var p GrantPolicy
	if err := jsonx.DecodeObjectStrict(data, &p); err != nil {
		return nil, configErr("GrantPolicy", err.Error())
	}
	if _, err := compileGrantPolicy(&p, nil); err != nil {
		return nil, err
	}
	return &p, nil
}

// compiledGrantPolicy is a validated policy, its entries parsed as the
// allow-list's.
type compiledGrantPolicy struct {
	def, required []string
	rules         *identityRules[[]string]
	ceiling       []string // every scope any entry allows
}

// compileGrantPolicy validates p; with supported non-nil, every scope it
// names must be one of them. A nil p compiles to nil.
func compileGrantPolicy(p *GrantPolicy, supported []string) (*compiledGrantPolicy, error) {
	if p == nil {
		return nil, nil
	}
	c := &compiledGrantPolicy{rules: newIdentityRules[[]string]()}
	check := func(where string, scopes []string) ([]string, error) {
		for _, sc := range scopes {
			if got, err := oauthmeta.ParseScope(sc); err != nil || len(got) != 1 || got[0] != sc {
				return nil, configErr("GrantPolicy", fmt.Sprintf("%s: %.40q is not a scope", where, sc))
			}
			if supported != nil && !slices.Contains(supported, sc) {
				return nil, configErr("GrantPolicy", fmt.Sprintf("%s: scope %.40q is not in Scopes", where, sc))
			}
			c.ceiling = appendNew(c.ceiling, sc)
		}
		return slices.Clone(scopes), nil
	}
	var err error
	if c.def, err = check("default", p.Default); err != nil {
		return nil, err
	}
	for _, m := range []struct {
		what string
		in   map[string][]string
		add  func(string, []string) (bool, error)
	}{
		{"users", p.Users, c.rules.addUser},
		{"groups", p.Groups, c.rules.addGroup},
		{"email_domains", p.EmailDomains, c.rules.addDomain},
	} {
		// In order, so that of two spellings of one entry the error
		// always names the same.
		for _, k := range slices.Sorted(maps.Keys(m.in)) {
			scopes, err := check(fmt.Sprintf("%s %.60q", m.what, k), m.in[k])
			if err != nil {
				return nil, err
			}
			dup, err := m.add(k, scopes)
			switch {
			case err != nil:
				return nil, configErr("GrantPolicy", m.what+": "+err.Error())
			case dup:
				return nil, configErr("GrantPolicy", fmt.Sprintf("%s: %.60q appears twice", m.what, k))
			}
		}
	}
	ceiling := c.ceiling
	if c.required, err = check("required", p.Required); err != nil {
		return nil, err
	}
	c.ceiling = ceiling // Required alone allows nothing
	return c, nil
}

// allowed returns the scopes the user k may obtain.
func (c *compiledGrantPolicy) allowed(k *userKeys) []string {
	out := slices.Clone(c.def)
	c.rules.match(k, func(scopes []string) { out = appendNew(out, scopes...) })
	return out
}

// apply returns the scopes of requested that id may obtain, or the
// access_denied error the client gets.
func (c *compiledGrantPolicy) apply(k *userKeys, requested []string) ([]string, *oauthmeta.Error) {
	allowed := c.allowed(k)
	if len(allowed) == 0 {
		return nil, oauthErr(oauthmeta.CodeAccessDenied, "this user may obtain no scope")
	}
	var out []string
	for _, sc := range requested {
		switch {
		case slices.Contains(allowed, sc):
			out = append(out, sc)
		case slices.Contains(c.required, sc):
			return nil, oauthErr(oauthmeta.CodeAccessDenied, "this user may not obtain the scope "+sc)
		}
	}
	if len(requested) > 0 && len(out) == 0 {
		return nil, oauthErr(oauthmeta.CodeAccessDenied, "this user may obtain none of the requested scopes")
	}
	return out, nil
}

// applyTo narrows req's scopes to what the upstream user k may obtain;
// the error is for the MCP client's redirect. A nil policy narrows
// nothing.
func (c *compiledGrantPolicy) applyTo(ctx context.Context, log *slog.Logger, req *authRequest, k *userKeys) *oauthmeta.Error {
	if c == nil {
		return nil
	}
	scopes, oe := c.apply(k, req.scopes)
	if oe != nil {
		log.InfoContext(ctx, "grant policy refused the request", "client_id", req.client.ID, "reason", oe.Description)
		return oe
	}
	if len(scopes) < len(req.scopes) {
		log.InfoContext(ctx, "grant policy narrowed the scopes", "client_id", req.client.ID,
			"requested", oauthmeta.FormatScope(req.scopes), "granted", oauthmeta.FormatScope(scopes))
	}
	req.scopes = scopes
	return nil
}

// narrow drops from a refreshed or exchanged token's scopes those no
// entry of the policy allows anyone. A grant that keeps none of its
// scopes cannot be refreshed: the client must authorize again. A nil
// policy narrows nothing.
func (c *compiledGrantPolicy) narrow(scopes []string) ([]string, *oauthmeta.Error) {
	if c == nil || len(scopes) == 0 {
		return scopes, nil
	}
	out := slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return !slices.Contains(c.ceiling, sc) })
	if len(out) == 0 {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "the grant policy no longer allows this grant's scopes")
	}
	return out, nil
}
