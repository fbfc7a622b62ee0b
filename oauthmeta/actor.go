package oauthmeta

import (
	"errors"
	"fmt"
	"strings"
)

// MaxActorDepth bounds the nesting of "act" claims [ParseActor] accepts: a
// chain longer than this is malformed whatever a policy allows.
const MaxActorDepth = 16

// TokenTypeDPoPJKT is the actor_token_type under which mcpauth accepts a
// DPoP key as the actor's credential in a delegation token exchange: the
// actor_token is the key's JWK SHA-256 thumbprint, and the request's DPoP
// proof (RFC 9449) must be signed with that key. The actor is then named
// by the thumbprint's URI ([JWKThumbprintURI]).
const TokenTypeDPoPJKT = "urn:mcpauth:params:oauth:token-type:dpop-jkt"

// jwkThumbprintPrefix is the RFC 9278 URI prefix of a SHA-256 JWK
// thumbprint.
const jwkThumbprintPrefix = "urn:ietf:params:oauth:jwk-thumbprint:sha-256:"

// JWKThumbprintURI is the RFC 9278 URI of the SHA-256 JWK thumbprint jkt,
// the subject of an actor known only by its DPoP key.
func JWKThumbprintURI(jkt string) string { return jwkThumbprintPrefix + jkt }

// Actor is the RFC 8693 §4.1 "act" claim: the party acting for the token's
// subject, and in Act the actor before it. The outermost Actor is the
// current one; nested ones are prior actors, informational except for
// their number.
type Actor struct {
	// Subject is "sub": the actor (a client_id, a workload's subject, or a
	// DPoP key's thumbprint URI). Required.
	Subject string `json:"sub"`
	// Issuer is "iss": who vouches for Subject; empty for a client of
	// the token's own issuer.
	Issuer string `json:"iss,omitempty"`
	// Act is the prior actor, nil at the end of the chain.
	Act *Actor `json:"act,omitempty"`
}

// ErrActor is wrapped by every error of [ParseActor].
var ErrActor = errors.New("oauthmeta: malformed act claim")

// ParseActor decodes an "act" (or "may_act") claim value by the module's
// JSON rule: an object with a non-empty "sub" of at most 512 bytes at every
// level, an optional string "iss", and at most [MaxActorDepth] levels.
// Other members of an actor object are ignored. The error wraps
// [ErrActor] and never quotes the input.
func ParseActor(data []byte) (*Actor, error) {
	if depth := nesting(data); depth > MaxActorDepth+1 {
		return nil, fmt.Errorf("%w: nested too deeply", ErrActor)
	}
	var a Actor
	if err := DecodeJSON(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrActor, err)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return &a, nil
}

// Validate checks every level of a decoded chain by the rules of
// [ParseActor]; a nil chain is valid.
func (a *Actor) Validate() error {
	n := 0
	for x := a; x != nil; x = x.Act {
		n++
		switch {
		case n > MaxActorDepth:
			return fmt.Errorf("%w: more than %d actors", ErrActor, MaxActorDepth)
		case x.Subject == "" || len(x.Subject) > 512 || len(x.Issuer) > 512:
			return fmt.Errorf("%w: actor without a usable sub", ErrActor)
		}
	}
	return nil
}

// nesting returns the deepest object nesting of a JSON text, ignoring
// brackets inside strings, so that a hostile claim is refused before it is
// decoded recursively.
func nesting(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// Depth is the number of actors in the chain: 0 for nil.
func (a *Actor) Depth() int {
	n := 0
	for x := a; x != nil; x = x.Act {
		n++
	}
	return n
}

// Chain returns the actors outermost (current) first.
func (a *Actor) Chain() []Actor {
	var out []Actor
	for x := a; x != nil; x = x.Act {
		out = append(out, Actor{Subject: x.Subject, Issuer: x.Issuer})
	}
	return out
}

// Matches reports whether the actor x is the party a, a "may_act" claim
// (RFC 8693 §4.4): the same "sub", and the same "iss" when may names one.
func (a *Actor) Matches(x *Actor) bool {
	return a != nil && x != nil && a.Subject == x.Subject && (a.Issuer == "" || a.Issuer == x.Issuer)
}

// String renders the chain for logs and audit records, current actor
// first: "planner > host-agent", each "iss|sub" when it has an issuer.
func (a *Actor) String() string {
	var b strings.Builder
	for x := a; x != nil; x = x.Act {
		if b.Len() > 0 {
			b.WriteString(" > ")
		}
		if x.Issuer != "" {
			b.WriteString(x.Issuer + "|")
		}
		b.WriteString(x.Subject)
	}
	return b.String()
}
