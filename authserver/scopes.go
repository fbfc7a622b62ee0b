package authserver

import (
	"slices"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Scopes have three limits here, applied in this order:
//
//   - Config.Scopes (scopes_supported) bounds everything: a scope outside
//     it is "not supported".
//   - A pre-registered client's AllowedScopes, when set, is a ceiling the
//     administrator chose: a supported scope outside it is "not allowed for
//     this client".
//   - A client's DefaultScopes (or Config.DefaultScopes) fill a request
//     that names no scope. A scope registered through Dynamic Client
//     Registration or a Client ID Metadata Document is such a default,
//     never a ceiling: MCP hosts register with the scope of the first
//     challenge and must be able to step up to more when a resource answers
//     403 insufficient_scope (RFC 7591 §3.2.1 lets the server replace
//     registered metadata; the response reports the effective value).

// scopePolicy holds the server's two scope settings above: Config.Scopes
// and Config.DefaultScopes.
type scopePolicy struct {
	supported []string // scopes_supported
	defaults  []string // for a client without DefaultScopes of its own
}

// grantable validates a requested scope string against scopes_supported
// and the client's ceiling; an empty request gets the client's default
// scopes that pass both.
func (p *scopePolicy) grantable(c *Client, requested string) ([]string, *oauthmeta.Error) {
	scopes, err := oauthmeta.ParseScope(requested)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "malformed scope")
	}
	if len(scopes) == 0 {
		for _, sc := range p.defaultsOf(c) {
			if slices.Contains(p.supported, sc) && c.allowsScope(sc) {
				scopes = append(scopes, sc)
			}
		}
		return scopes, nil
	}
	for _, sc := range scopes {
		if !slices.Contains(p.supported, sc) {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not supported: "+sc)
		}
		if !c.allowsScope(sc) {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not allowed for this client: "+sc)
		}
	}
	return scopes, nil
}

// defaultsOf returns what a request from c that names no scope asks for.
func (p *scopePolicy) defaultsOf(c *Client) []string {
	if len(c.DefaultScopes) > 0 {
		return c.DefaultScopes
	}
	return p.defaults
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	return !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}

// appendNew appends to list each of xs it does not hold yet.
func appendNew(list []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(list, x) {
			list = append(list, x)
		}
	}
	return list
}

// registered turns the "scope" a client registered (RFC 7591 §2) into
// its default scopes: the supported ones, in order, each once.
// Unsupported scopes are dropped rather than refused, as RFC 7591 §3.2.1
// allows; the error is for a malformed value only.
func (p *scopePolicy) registered(scope string) ([]string, error) {
	scopes, err := oauthmeta.ParseScope(scope)
	if err != nil {
		return nil, err
	}
	scopes = slices.DeleteFunc(scopes, func(sc string) bool { return !slices.Contains(p.supported, sc) })
	if len(scopes) == 0 {
		return nil, nil
	}
	return scopes, nil
}
