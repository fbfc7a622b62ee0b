package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/client"
)

// authParamFlags are the client commands' --auth-param flags: extra
// authorization request parameters for one authorization server, such as
// the audience Ory Hydra and Auth0 put in "aud" instead of the RFC 8707
// resource.
type authParamFlags struct {
	params url.Values
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
}

// authServers returns the client's per-issuer options for the flags: the
// --auth-param parameters bound to issuer, or to the single authorization
// server the resource's metadata names when issuer is empty. Nil without
// --auth-param.
func (a *authParamFlags) authServers(ctx context.Context, issuer, serverURL string, insecureHTTP bool) (map[string]client.AuthServerOptions, error) {
	if len(a.params) == 0 {
		return nil, nil
	}
	if issuer == "" {
		issuers, err := resourceIssuers(ctx, serverURL, insecureHTTP)
		if err != nil {
			return nil, fmt.Errorf("--auth-param without --issuer: %w", err)
		}
		if len(issuers) != 1 {
			return nil, fmt.Errorf("--auth-param: the server lists %d authorization servers (%v): pass --issuer", len(issuers), issuers)
		}
		issuer = issuers[0]
	} else if err := checkServiceURL("--issuer", issuer, insecureHTTP); err != nil {
		return nil, err
	}
	return map[string]client.AuthServerOptions{issuer: {AuthorizationParams: a.params}}, nil
}
