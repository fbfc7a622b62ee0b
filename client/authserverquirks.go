package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// oidcScopes are the OpenID Connect scopes a provider accepts next to a
// "/.default" scope.
var oidcScopes = []string{"openid", "profile", "email", "offline_access"}

// isDefaultScope reports whether s is a "/.default" scope: every
// permission granted to the client for one resource (Microsoft Entra ID).
func isDefaultScope(s string) bool { return strings.HasSuffix(s, "/.default") }

// checkResourceScopes refuses an invalid scope token, a duplicate, and a
// "/.default" scope combined with another.
func checkResourceScopes(scopes []string) error {
	for i, s := range scopes {
		if !oauthmeta.ValidScopeToken(s) {
			return fmt.Errorf("%q is not a scope token", s)
		}
		if slices.Contains(scopes[:i], s) {
			return fmt.Errorf("%q given twice", s)
		}
	}
	if len(scopes) > 1 && slices.ContainsFunc(scopes, isDefaultScope) {
		return errors.New(`a "/.default" scope cannot be combined with other scopes`)
	}
	return nil
}

// requestScopes returns the scopes sent to this server for the MCP scopes
// chosen: unchanged without ResourceScopes; with a "/.default" resource
// scope, that scope and the OpenID Connect scopes asked for; else the
// MCP scopes and the resource scopes.
func (o AuthServerOptions) requestScopes(scopes []string) []string {
	if len(o.ResourceScopes) == 0 {
		return scopes
	}
	var out []string
	if slices.ContainsFunc(o.ResourceScopes, isDefaultScope) {
		for _, s := range scopes {
			if slices.Contains(oidcScopes, s) {
				out = append(out, s)
			}
		}
	} else {
		out = slices.Clone(scopes)
	}
	for _, s := range o.ResourceScopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sendsResource reports whether the resource indicator goes in a request
// to this server; refresh says whether it is a refresh request.
func (o AuthServerOptions) sendsResource(refresh bool) bool {
	return !o.OmitResource && !(refresh && o.OmitResourceOnRefresh)
}

// pkceAccepted reports whether metadata md allows PKCE S256: listed, or
// the field absent and the opt-in AssumeS256 set.
func (o AuthServerOptions) pkceAccepted(md *oauthmeta.AuthServerMetadata) bool {
	return md.SupportsS256() || o.AssumeS256 && md.CodeChallengeMethodsSupported == nil
}
