package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// downstreamFlags are the authserver flags of the downstream APIs for
// which resource servers obtain tokens of their own by the token
// exchange (authserver.DownstreamAPI).
type downstreamFlags struct {
	apis, clients listFlag
	tokenTTL      time.Duration
}

func (d *downstreamFlags) register(fs *flag.FlagSet) {
	fs.Var(&d.apis, "downstream-api", "issue tokens for the downstream API `URI=SCOPE[,SCOPE]...` (each scope one of --scopes) "+
		"to every --downstream-client, in exchange for the access tokens it receives (repeatable)")
	fs.Var(&d.clients, "downstream-client", "let the pre-registered confidential --client `ID=RESOURCE` "+
		"(with grant=urn:ietf:params:oauth:grant-type:token-exchange) exchange access tokens for RESOURCE "+
		"for tokens for every --downstream-api (repeatable)")
	fs.DurationVar(&d.tokenTTL, "downstream-token-ttl", authserver.DefaultDownstreamTokenTTL,
		"lifetime of a token for a --downstream-api, at most --token-ttl (never beyond the exchanged token)")
}

// config returns the downstream APIs, each open to every downstream
// client.
func (d *downstreamFlags) config() ([]authserver.DownstreamAPI, error) {
	if len(d.apis) == 0 {
		if len(d.clients) > 0 {
			return nil, fmt.Errorf("--downstream-client needs --downstream-api")
		}
		return nil, nil
	}
	if len(d.clients) == 0 {
		return nil, fmt.Errorf("--downstream-api needs at least one --downstream-client")
	}
	clients := map[string]string{}
	for _, spec := range d.clients {
		id, res, err := cutPair("--downstream-client", spec, "ID=RESOURCE")
		if err != nil {
			return nil, err
		}
		clients[id] = res
	}
	apis := make([]authserver.DownstreamAPI, 0, len(d.apis))
	for _, spec := range d.apis {
		// The URI may hold "=" in its query: the scopes follow the last one.
		i := strings.LastIndexByte(spec, '=')
		if i <= 0 || i == len(spec)-1 {
			return nil, fmt.Errorf("--downstream-api %q is not URI=SCOPE[,SCOPE]...", spec)
		}
		scopes := fields(spec[i+1:])
		if len(scopes) == 0 {
			return nil, fmt.Errorf("--downstream-api %q names no scope", spec)
		}
		apis = append(apis, authserver.DownstreamAPI{
			Resource: spec[:i], Scopes: scopes, Clients: clients, TokenTTL: d.tokenTTL,
		})
	}
	return apis, nil
}
