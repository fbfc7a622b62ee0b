package authserver

import (
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// resourcePolicy decides which resource indicators (RFC 8707) a client
// may name at the authorization endpoint and the token endpoint's own
// grants (requirement AS-08).
type resourcePolicy struct {
	// allowed is Config.Resources: when not empty, the only resources
	// that may be requested.
	allowed []string
	// downstream are the APIs whose tokens come from the token exchange
	// only.
	downstream downstreamAPIs
	// urls is the https rule (http to loopback with
	// InsecureAllowHTTPLoopback).
	urls oauthmeta.URLPolicy
}

// check validates one resource indicator: syntax, https (http only to
// loopback with InsecureAllowHTTPLoopback), not a downstream API (whose
// tokens come from the token exchange only), and the configured
// allowlist.
func (p *resourcePolicy) check(res string) *oauthmeta.Error {
	if checkResourceSyntax(res) != nil || p.urls.CheckURL(res) != nil {
		return oauthErr(oauthmeta.CodeInvalidTarget, "resource must be an absolute https URI without fragment")
	}
	if p.downstream.lookup(res) != nil {
		return oauthErr(oauthmeta.CodeInvalidTarget, "resource is reachable by token exchange only")
	}
	if len(p.allowed) > 0 && !hasResource(p.allowed, res) {
		return oauthErr(oauthmeta.CodeInvalidTarget, "resource is not served by this authorization server")
	}
	return nil
}

// checkAll checks each of resources.
func (p *resourcePolicy) checkAll(resources []string) *oauthmeta.Error {
	for _, res := range resources {
		if oe := p.check(res); oe != nil {
			return oe
		}
	}
	return nil
}

// checkResourceSyntax accepts an absolute http(s) URI without fragment or
// user information (RFC 8707 §2).
func checkResourceSyntax(res string) error {
	if _, err := oauthmeta.CanonicalResource(res); err != nil {
		return err
	}
	u, err := url.Parse(res)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return oauthmeta.ErrInvalidResource
	}
	return nil
}

// hasResource reports whether list names res, as [oauthmeta.SameResource]
// compares them.
func hasResource(list []string, res string) bool {
	return slices.ContainsFunc(list, func(r string) bool { return oauthmeta.SameResource(r, res) })
}

// narrowResources returns the audience for a token request (RFC 8707 §2.2,
// requirement AS-08): the requested resources, each of which must be
// within the grant, or the grant's resources when none are requested.
func narrowResources(granted, requested []string) ([]string, *oauthmeta.Error) {
	if len(requested) == 0 {
		return granted, nil
	}
	out := make([]string, 0, len(requested))
	for _, res := range requested {
		if !hasResource(granted, res) {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource was not part of the authorization")
		}
		out = appendNew(out, res)
	}
	return out, nil
}
