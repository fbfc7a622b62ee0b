package authserver

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DefaultDownstreamTokenTTL is the lifetime of a token issued by the
// token exchange for a [DownstreamAPI] whose TokenTTL is zero.
const DefaultDownstreamTokenTTL = 5 * time.Minute

// DownstreamAPI is an API, other than the MCP server, that resource
// servers may call as the user with a token of its own, obtained from
// this server by the RFC 8693 token exchange (see [Config.DownstreamAPIs]):
// the resource server sends the access token it received (its
// "subject_token") and names the API as "resource" or "audience"; the
// answer is a new RFC 9068 JWT access token, signed by this server, whose
// "aud" is the API alone, "sub" the user, "client_id" the resource server
// and "act" (RFC 8693 §4.1) the resource server as the actor. The MCP
// access token itself never leaves the resource server (no token
// passthrough), and the API, protected by [resource.Verifier] configured
// with Resource, accepts only the tokens issued for it.
//
// Scopes: the issued token carries the requested scopes, each of which
// must be in Scopes, in the subject token's "scope" and within the
// exchanging client's [Client.AllowedScopes]; a request without "scope"
// gets every scope of the subject token that Scopes lists. A resource
// server can so never obtain more than the user approved for the MCP
// client (API scopes are MCP scopes the user sees on the consent page),
// and the grant policy's current ceiling applies as at a refresh. Anything
// else is refused with invalid_scope.
//
// [resource.Verifier]: https://pkg.go.dev/github.com/mcpauth/mcpauth/resource#Verifier
type DownstreamAPI struct {
	// Resource is the API's resource URI (RFC 8707): the "aud" of the
	// tokens issued for it, and what the exchange's "resource" or
	// "audience" must name (compared as [oauthmeta.SameResource] does).
	// An absolute http(s) URI without fragment, https unless
	// InsecureAllowHTTPLoopback and a loopback host. It may be neither the
	// issuer, nor DefaultResource, nor in [Config.Resources], nor the
	// resource of an exchanging client: MCP clients cannot ask for it at
	// the authorization endpoint (invalid_target), so its tokens come from
	// the exchange only. REQUIRED.
	Resource string
	// Scopes are the scopes the API accepts, each in [Config.Scopes]. At
	// least one is REQUIRED.
	Scopes []string
	// Clients maps the client_id of each resource server that may ask for
	// tokens for this API to the resource (the MCP server URI) whose
	// identity it is: it may exchange only access tokens whose "aud"
	// holds that resource. Each must be a pre-registered confidential
	// client allowed the token exchange grant, and name the same resource
	// here, in every other DownstreamAPI and in
	// [Config.VaultResourceServers]. Other clients get invalid_target
	// (or unauthorized_client when they may exchange nothing). Empty means
	// no client may: the API is unreachable.
	Clients map[string]string
	// TokenTTL is the lifetime of the issued tokens, at most
	// [Config.AccessTokenTTL]; a token never outlives its subject token.
	// Zero means [DefaultDownstreamTokenTTL].
	TokenTTL time.Duration
}

// downstreamAPIs are the validated [Config.DownstreamAPIs].
type downstreamAPIs []DownstreamAPI

// lookup returns the API that target names, or nil.
func (d downstreamAPIs) lookup(target string) *DownstreamAPI {
	if i := slices.IndexFunc(d, func(a DownstreamAPI) bool { return oauthmeta.SameResource(a.Resource, target) }); i >= 0 {
		return &d[i]
	}
	return nil
}

// exchanger reports whether clientID may ask for a token for some API.
func (d downstreamAPIs) exchanger(clientID string) bool {
	return slices.ContainsFunc(d, func(a DownstreamAPI) bool { _, ok := a.Clients[clientID]; return ok })
}

// newDownstreamAPIs validates cfg.DownstreamAPIs, whose exchanging
// clients must be pre-registered in clients.
func newDownstreamAPIs(cfg *settings, clients *clientRegistry) (downstreamAPIs, error) {
	if len(cfg.DownstreamAPIs) == 0 {
		return nil, nil
	}
	identity := map[string]string{} // client_id → its resource, across every list
	if cfg.Vault != nil {
		maps.Copy(identity, cfg.VaultResourceServers)
	}
	apis := make(downstreamAPIs, 0, len(cfg.DownstreamAPIs))
	for i, a := range cfg.DownstreamAPIs {
		field := fmt.Sprintf("DownstreamAPIs[%d]", i)
		if err := checkDownstreamAPI(cfg, clients, field, &a, apis, identity); err != nil {
			return nil, err
		}
		a.TokenTTL = cmp.Or(a.TokenTTL, DefaultDownstreamTokenTTL)
		a.Scopes, a.Clients = slices.Clone(a.Scopes), maps.Clone(a.Clients)
		apis = append(apis, a)
	}
	exchangers := slices.Collect(maps.Values(identity))
	for _, a := range apis {
		if hasResource(exchangers, a.Resource) {
			return nil, configErr("DownstreamAPIs", "an API's resource may not be an exchanging client's resource")
		}
	}
	return apis, nil
}

// checkDownstreamAPI validates one API against the configuration, the
// APIs before it and the clients' identities, which it extends.
func checkDownstreamAPI(cfg *settings, clients *clientRegistry, field string, a *DownstreamAPI, before downstreamAPIs, identity map[string]string) error {
	policy := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}
	switch {
	case checkResourceSyntax(a.Resource) != nil || policy.CheckURL(a.Resource) != nil:
		return configErr(field+".Resource", "must be an absolute https URI without fragment (http only to loopback with InsecureAllowHTTPLoopback)")
	case oauthmeta.SameResource(a.Resource, cfg.Issuer) || oauthmeta.SameResource(a.Resource, cfg.DefaultResource) ||
		hasResource(cfg.Resources, a.Resource):
		return configErr(field+".Resource", "may not be the issuer, DefaultResource or one of Resources")
	case before.lookup(a.Resource) != nil:
		return configErr(field+".Resource", "listed twice")
	case len(a.Scopes) == 0:
		return configErr(field+".Scopes", "at least one scope is required")
	case a.TokenTTL < 0 || a.TokenTTL > cfg.AccessTokenTTL:
		return configErr(field+".TokenTTL", "must be between zero and AccessTokenTTL")
	}
	if !subset(a.Scopes, cfg.Scopes) {
		return configErr(field+".Scopes", "every scope must be in Scopes")
	}
	for id, res := range a.Clients {
		if err := clients.checkExchanger(field+".Clients", id, res); err != nil {
			return err
		}
		if prev, seen := identity[id]; seen && prev != res {
			return configErr(field+".Clients", "a client must name the same resource everywhere")
		}
		identity[id] = res
	}
	return nil
}
