package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// connectFlags are the authserver flags of the third-party providers
// whose accounts users connect for MCP servers (README, "Connecting
// third-party accounts"). Every flag but --connect names its provider:
// NAME=VALUE.
type connectFlags struct {
	providers, clientIDs, clientSecrets, scopes, authParams, displayNames listFlag
}

func (c *connectFlags) register(fs *flag.FlagSet) {
	fs.Var(&c.providers, "connect", "with --upstream: let users connect their account at `NAME=github|google|ISSUER_URL` "+
		"for the --exchange-client resource servers, which then get its tokens by token exchange with audience NAME "+
		"(repeatable; register the /connect/callback URL printed at start at each provider)")
	fs.Var(&c.clientIDs, "connect-client-id", "this server's client_id at the --connect provider, as `NAME=ID` (required for each)")
	fs.Var(&c.clientSecrets, "connect-client-secret", "this server's client secret at the --connect provider, as `NAME=env:VAR` (never on the command line)")
	fs.Var(&c.scopes, "connect-scopes", "the scopes asked of the --connect provider, as `NAME=SCOPES` separated by spaces or commas")
	fs.Var(&c.authParams, "connect-auth-param", "send `NAME=PARAM=VALUE` on the authorization request at the --connect provider NAME (repeatable)")
	fs.Var(&c.displayNames, "connect-display-name", "the name the connect page shows for the --connect provider, as `NAME=TEXT`")
}

// set reports whether any connect flag was given.
func (c *connectFlags) set() bool {
	return len(c.providers)+len(c.clientIDs)+len(c.clientSecrets)+len(c.scopes)+len(c.authParams)+len(c.displayNames) > 0
}

// config returns the connect providers, each with its own vault sealing
// under keys; nil without --connect. insecureHTTP permits providers on
// plain-http loopback addresses.
func (c *connectFlags) config(insecureHTTP bool, keys [][]byte, logger *slog.Logger, getenv func(string) string) ([]authserver.ConnectProvider, error) {
	byName := map[string]*upstream.Config{}
	var names []string
	for _, spec := range c.providers {
		name, preset, err := cutPair("--connect", spec, "NAME=github|google|ISSUER_URL")
		if err != nil {
			return nil, err
		}
		if byName[name] != nil {
			return nil, fmt.Errorf("--connect: %q is named twice", name)
		}
		if byName[name], err = upstream.Preset(preset, ""); err != nil {
			return nil, fmt.Errorf("--connect %s: %w", name, err)
		}
		byName[name].InsecureAllowHTTPLoopback = insecureHTTP
		names = append(names, name)
	}
	display := map[string]string{}
	for _, f := range []struct {
		flag  string
		specs listFlag
		apply func(p *upstream.Config, name, v string) error
	}{
		{"--connect-client-id", c.clientIDs, func(p *upstream.Config, _, v string) error { p.ClientID = v; return nil }},
		{"--connect-client-secret", c.clientSecrets, func(p *upstream.Config, _, v string) (err error) {
			p.ClientSecret, err = envSecret("--connect-client-secret", v, getenv)
			return err
		}},
		{"--connect-scopes", c.scopes, func(p *upstream.Config, _, v string) error { p.Scopes = fields(v); return nil }},
		{"--connect-auth-param", c.authParams, func(p *upstream.Config, _, v string) error {
			k, val, ok := strings.Cut(v, "=")
			if !ok || k == "" {
				return fmt.Errorf("--connect-auth-param: %.60q is not NAME=PARAM=VALUE", v)
			}
			p.AuthParams = maps.Clone(p.AuthParams)
			if p.AuthParams == nil {
				p.AuthParams = map[string]string{}
			}
			p.AuthParams[k] = val
			return nil
		}},
		{"--connect-display-name", c.displayNames, func(_ *upstream.Config, name, v string) error { display[name] = v; return nil }},
	} {
		for _, spec := range f.specs {
			name, v, err := cutPair(f.flag, spec, "NAME=VALUE")
			if err != nil {
				return nil, err
			}
			p := byName[name]
			if p == nil {
				return nil, fmt.Errorf("%s %s: no --connect %s=…", f.flag, name, name)
			}
			if err := f.apply(p, name, v); err != nil {
				return nil, err
			}
		}
	}
	var out []authserver.ConnectProvider
	for _, name := range names {
		cfg := byName[name]
		if cfg.ClientID == "" {
			return nil, fmt.Errorf("--connect %s: needs --connect-client-id %s=ID", name, name)
		}
		p, err := upstream.New(*cfg)
		if err != nil {
			closeConnect(out)
			return nil, fmt.Errorf("--connect %s: %w", name, err)
		}
		out = append(out, authserver.ConnectProvider{Name: name, DisplayName: display[name], Login: p,
			Vault: upstream.VaultConfig{Keys: slices.Clone(keys), Provider: p, Logger: logger}.Open})
	}
	return out, nil
}

// errConnectNeedsUpstream: the connect page signs users in at --upstream.
var errConnectNeedsUpstream = errors.New("the --connect flags need --upstream: the connect page signs the user in there")

// closeConnect stops the background work of the connect providers.
func closeConnect(providers []authserver.ConnectProvider) {
	for _, p := range providers {
		if c, ok := p.Login.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}
}
