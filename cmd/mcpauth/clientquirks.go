package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/client"
)

// authParamFlags are the client commands' settings for one authorization
// server's quirks: --auth-param, extra authorization request parameters
// such as the audience Ory Hydra and Auth0 put in "aud" instead of the
// RFC 8707 resource; --assume-s256; --omit-resource; --resource-scope.
type authParamFlags struct {
	params         url.Values
	assumeS256     bool
	omitResource   bool
	resourceScopes []string
}

func (a *authParamFlags) register(fs *flag.FlagSet) {
	fs.Func("auth-param", "an extra authorization request parameter `NAME=VALUE` for the authorization server (--issuer, or the one the "+
		"server's metadata names), e.g. audience=https://mcp.example.com/mcp for Ory Hydra or Auth0 (repeatable; "+
		"the OAuth and PKCE parameters the client sets itself cannot be given)", func(v string) error {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" || value == "" {
			return errors.New("want NAME=VALUE")
		}
		if a.params == nil {
			a.params = url.Values{}
		}
		if a.params.Has(name) {
			return fmt.Errorf("%s given twice", name)
		}
		a.params.Set(name, value)
		return nil
	})
	fs.BoolVar(&a.assumeS256, "assume-s256", false, "use PKCE S256 with the authorization server (--issuer, or the one the server's metadata names) "+
		"although its metadata omits code_challenge_methods_supported, as Microsoft Entra ID and Amazon Cognito do; "+
		"a server that lists methods without S256 stays refused")
	fs.BoolVar(&a.omitResource, "omit-resource", false, "leave the RFC 8707 resource parameter out of the requests to the authorization server "+
		"(--issuer, or the one the server's metadata names), for servers that refuse it (Microsoft Entra ID v2.0); "+
		"the MCP server must then check the token's audience by its provider profile")
	fs.Func("resource-scope", "a `SCOPE` naming the MCP server at the authorization server (--issuer, or the one the server's metadata names), "+
		"asked for besides the MCP scopes, e.g. api://APP-ID/mcp.tools; one ending in /.default (Microsoft Entra ID) replaces them "+
		"and cannot be combined with another (repeatable)", func(v string) error {
		if slices.Contains(a.resourceScopes, v) {
			return fmt.Errorf("%s given twice", v)
		}
		a.resourceScopes = append(a.resourceScopes, v)
		return nil
	})
}

// set reports whether any of the flags was given.
func (a *authParamFlags) set() bool {
	return len(a.params) > 0 || a.assumeS256 || a.omitResource || len(a.resourceScopes) > 0
}

// authServers returns the client's per-issuer options for the flags: the
// settings bound to issuer, or to the single authorization server the
// resource's metadata names when issuer is empty. Nil without any of the
// flags. The client library checks the values.
func (a *authParamFlags) authServers(ctx context.Context, issuer, serverURL string, insecureHTTP bool) (map[string]client.AuthServerOptions, error) {
	if !a.set() {
		return nil, nil
	}
	if issuer == "" {
		issuers, err := resourceIssuers(ctx, serverURL, insecureHTTP)
		if err != nil {
			return nil, fmt.Errorf("%s without --issuer: %w", a.names(), err)
		}
		if len(issuers) != 1 {
			return nil, fmt.Errorf("%s: the server lists %d authorization servers (%v): pass --issuer", a.names(), len(issuers), issuers)
		}
		issuer = issuers[0]
	} else if err := checkServiceURL("--issuer", issuer, insecureHTTP); err != nil {
		return nil, err
	}
	return map[string]client.AuthServerOptions{issuer: {AuthorizationParams: a.params, AssumeS256: a.assumeS256,
		OmitResource: a.omitResource, ResourceScopes: a.resourceScopes}}, nil
}

// names lists the flags given, for messages.
func (a *authParamFlags) names() string {
	var n []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"--auth-param", len(a.params) > 0}, {"--assume-s256", a.assumeS256}, {"--omit-resource", a.omitResource},
		{"--resource-scope", len(a.resourceScopes) > 0}} {
		if f.set {
			n = append(n, f.name)
		}
	}
	return strings.Join(n, ", ")
}
