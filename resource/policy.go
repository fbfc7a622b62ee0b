package resource

import (
	"fmt"
	"slices"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Policy decides which scopes each MCP operation needs. The
// scopes an operation needs are the union of Default, the rule for its
// JSON-RPC method, and the rule for its tool (tools/call), resource URI
// (resources/read) or prompt (prompts/get); each list means "all of
// these". Implies expands the scopes a token was granted before the check:
// with {"admin": ["files:write"]}, a token with "admin" may do what
// "files:write" may. Implications are transitive.
//
// A Policy with only Default needs no request body; any other rule makes
// the middleware read and scan the JSON-RPC body. A Policy is read when
// [New] is called and may not be changed afterwards. The JSON form is
//
//	{"default": ["mcp:tools"],
//	 "methods": {"tools/list": ["mcp:read"]},
//	 "tools": {"write_file": ["files:write"]},
//	 "resources": {"file:///secret": ["files:admin"]},
//	 "prompts": {"deploy": ["ops:deploy"]},
//	 "implies": {"admin": ["files:write", "files:read", "mcp:tools"]},
//	 "delegation": {"tools": {"deploy": {"forbid": true}}}}
type Policy struct {
	// Default is needed by every request.
	Default []string `json:"default,omitempty"`
	// Methods maps a JSON-RPC method ("tools/list") to its scopes.
	Methods map[string][]string `json:"methods,omitempty"`
	// Tools maps a tool name (tools/call params.name) to its scopes.
	Tools map[string][]string `json:"tools,omitempty"`
	// Resources maps a resource URI (resources/read params.uri) to its
	// scopes, matched exactly.
	Resources map[string][]string `json:"resources,omitempty"`
	// Prompts maps a prompt name (prompts/get params.name) to its scopes.
	Prompts map[string][]string `json:"prompts,omitempty"`
	// Implies maps a scope to the scopes it includes.
	Implies map[string][]string `json:"implies,omitempty"`
	// Delegation decides which delegated tokens may be used (see
	// [DelegationPolicy]). Nil means any, as their scopes allow.
	Delegation *DelegationPolicy `json:"delegation,omitempty"`
}

// ParsePolicy decodes a policy from its JSON form strictly (one object,
// case-sensitive names, no duplicates, no unknown members, so a misspelt
// rule cannot silently go unenforced) and validates it.
func ParsePolicy(data []byte) (*Policy, error) {
	var p Policy
	if err := jsonx.DecodeObjectStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%w: policy: %w", ErrInvalidConfig, err)
	}
	if _, err := compilePolicy(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// compiledPolicy has every operation's scope list precomputed, so a
// decision is a map lookup and a scan of the token's scopes.
type compiledPolicy struct {
	def        []string
	needsBody  bool
	methods    map[string][]string // default ∪ methods[m]
	tools      map[string][]string // default ∪ methods["tools/call"] ∪ tools[name]
	resources  map[string][]string
	prompts    map[string][]string
	impliedBy  map[string][]string // required scope -> granted scopes that include it
	delegation *DelegationPolicy   // nil: no rule
}

func compilePolicy(p *Policy) (*compiledPolicy, error) {
	if p == nil {
		return nil, nil
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	c := &compiledPolicy{
		def: union(p.Default),
		needsBody: len(p.Methods)+len(p.Tools)+len(p.Resources)+len(p.Prompts) > 0 ||
			(p.Delegation != nil && len(p.Delegation.Tools) > 0),
		methods:   map[string][]string{},
		tools:     map[string][]string{},
		resources: map[string][]string{},
		prompts:   map[string][]string{},
	}
	for m, s := range p.Methods {
		c.methods[m] = union(p.Default, s)
	}
	for name, s := range p.Tools {
		c.tools[name] = union(p.Default, p.Methods["tools/call"], s)
	}
	for uri, s := range p.Resources {
		c.resources[uri] = union(p.Default, p.Methods["resources/read"], s)
	}
	for name, s := range p.Prompts {
		c.prompts[name] = union(p.Default, p.Methods["prompts/get"], s)
	}
	c.impliedBy = invertImplies(p.Implies)
	if p.Delegation != nil {
		d := *p.Delegation
		d.Tools = make(map[string]DelegationRule, len(p.Delegation.Tools))
		for name, r := range p.Delegation.Tools {
			r.Actors = slices.Clone(r.Actors)
			d.Tools[name] = r
		}
		d.Default.Actors = slices.Clone(d.Default.Actors)
		c.delegation = &d
	}
	return c, nil
}

func (p *Policy) validate() error {
	lists := []struct {
		what  string
		rules map[string][]string
	}{{"default", map[string][]string{"default": p.Default}}, {"methods", p.Methods}, {"tools", p.Tools},
		{"resources", p.Resources}, {"prompts", p.Prompts}, {"implies", p.Implies}}
	if err := p.Delegation.validate(); err != nil {
		return err
	}
	for _, l := range lists {
		for k, scopes := range l.rules {
			if k == "" {
				return fmt.Errorf("%w: policy %s: empty name", ErrInvalidConfig, l.what)
			}
			if l.what == "implies" && !oauthmeta.ValidScopeToken(k) {
				return fmt.Errorf("%w: policy implies: invalid scope token", ErrInvalidConfig)
			}
			if err := checkScopes("policy "+l.what, scopes); err != nil {
				return err
			}
		}
	}
	return nil
}

// union concatenates scope lists, keeping the first occurrence of each.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// invertImplies computes, for every implied scope, the granted scopes that
// include it, following implications transitively (cycles are harmless).
func invertImplies(implies map[string][]string) map[string][]string {
	out := map[string][]string{}
	for granted := range implies {
		seen := map[string]bool{granted: true}
		queue := []string{granted}
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			for _, next := range implies[s] {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
					out[next] = append(out[next], granted)
				}
			}
		}
	}
	return out
}

// defaultScopes is what a 401 challenge names.
func (c *compiledPolicy) defaultScopes() []string {
	if c == nil {
		return nil
	}
	return c.def
}

// required returns every scope the message's operation needs.
func (c *compiledPolicy) required(m *mcpMessage) []string {
	if !m.hasMethod {
		return c.def
	}
	var (
		s  []string
		ok bool
	)
	switch string(m.method) {
	case "tools/call":
		s, ok = c.tools[string(m.name)]
	case "resources/read":
		s, ok = c.resources[string(m.name)]
	case "prompts/get":
		s, ok = c.prompts[string(m.name)]
	}
	if ok {
		return s
	}
	if s, ok = c.methods[string(m.method)]; ok {
		return s
	}
	return c.def
}

// missing returns the required scopes that granted does not include, even
// through implications; nil when nothing is missing.
func (c *compiledPolicy) missing(required, granted []string) []string {
	var out []string
	for _, r := range required {
		if !c.grants(granted, r) {
			out = append(out, r)
		}
	}
	return out
}

func (c *compiledPolicy) grants(granted []string, r string) bool {
	if slices.Contains(granted, r) {
		return true
	}
	for _, g := range c.impliedBy[r] {
		if slices.Contains(granted, g) {
			return true
		}
	}
	return false
}

// Grants reports whether info's scopes, expanded by the policy's implied
// scopes, include every scope in scopes. Handlers use it to tailor results
// to the caller, such as a tools/list that shows only the tools a token may
// call. A nil info grants nothing.
func (v *Verifier) Grants(info *TokenInfo, scopes ...string) bool {
	if info == nil {
		return false
	}
	return !slices.ContainsFunc(scopes, func(s string) bool {
		return !slices.Contains(info.Scopes, s) && (v.policy == nil || !v.policy.grants(info.Scopes, s))
	})
}
