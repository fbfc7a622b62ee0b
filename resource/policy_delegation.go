package resource

import (
	"fmt"
	"slices"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DelegationPolicy decides which delegated tokens (tokens with an actor
// chain, RFC 8693 §4.1 "act") may be used: Default for every request, and
// for a tools/call of a tool in Tools that tool's rule instead. Its JSON
// form is the "delegation" member of a [Policy]:
//
//	"delegation": {"default": {"max_depth": 2},
//	               "tools": {"deploy": {"forbid": true},
//	                         "search": {"require": true, "actors": ["planner-agent"]}}}
type DelegationPolicy struct {
	// Default applies to every request a rule of Tools does not decide.
	Default DelegationRule `json:"default,omitzero"`
	// Tools maps a tool name (tools/call params.name) to its rule.
	Tools map[string]DelegationRule `json:"tools,omitempty"`
}

// DelegationRule is what one operation demands of a token's actor chain.
// The zero value allows any token, delegated or not.
type DelegationRule struct {
	// Require refuses tokens without an actor chain: only a delegate may
	// call.
	Require bool `json:"require,omitempty"`
	// Forbid refuses tokens with an actor chain: only the subject's own
	// client may call. Require and Forbid exclude each other.
	Forbid bool `json:"forbid,omitempty"`
	// Actors, when not empty, lists the only current actors (the
	// outermost "act" "sub") allowed.
	Actors []string `json:"actors,omitempty"`
	// MaxDepth, when positive, bounds the chain's length: 1 allows only
	// tokens delegated once.
	MaxDepth int `json:"max_depth,omitempty"`
}

// validate checks a rule; what names it in errors.
func (r *DelegationRule) validate(what string) error {
	switch {
	case r.Require && r.Forbid:
		return fmt.Errorf("%w: policy delegation %s: require and forbid exclude each other", ErrInvalidConfig, what)
	case r.MaxDepth < 0 || r.MaxDepth > oauthmeta.MaxActorDepth:
		return fmt.Errorf("%w: policy delegation %s: max_depth must be between 0 and %d", ErrInvalidConfig, what, oauthmeta.MaxActorDepth)
	case slices.Contains(r.Actors, ""):
		return fmt.Errorf("%w: policy delegation %s: empty actor", ErrInvalidConfig, what)
	}
	return nil
}

// validate checks every rule.
func (p *DelegationPolicy) validate() error {
	if p == nil {
		return nil
	}
	if err := p.Default.validate("default"); err != nil {
		return err
	}
	for name, r := range p.Tools {
		if name == "" {
			return fmt.Errorf("%w: policy delegation tools: empty name", ErrInvalidConfig)
		}
		if err := r.validate("tools"); err != nil {
			return err
		}
	}
	return nil
}

// rule returns the rule for an operation (m nil: the request's body was
// not read, so Default).
func (p *DelegationPolicy) rule(m *mcpMessage) *DelegationRule {
	if m != nil && m.hasMethod && string(m.method) == "tools/call" {
		if r, ok := p.Tools[string(m.name)]; ok {
			return &r
		}
	}
	return &p.Default
}

// check applies the rule to a token's actor chain.
func (r *DelegationRule) check(actors []oauthmeta.Actor) error {
	switch {
	case r.Forbid && len(actors) > 0:
		return errDelegationForbidden
	case r.Require && len(actors) == 0:
		return errDelegationRequired
	case len(actors) > 0 && len(r.Actors) > 0 && !slices.Contains(r.Actors, actors[0].Subject):
		return errActorNotAllowed
	case r.MaxDepth > 0 && len(actors) > r.MaxDepth:
		return errDelegationTooDeep
	}
	return nil
}
