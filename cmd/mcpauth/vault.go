package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/seal"
)

// vaultConfig is what the vault flags configure: the sealing keys, and
// the token exchange for the upstream token.
type vaultConfig struct {
	Keys            [][]byte
	Audience        string
	ResourceServers map[string]string
}

// vaultFlags are the authserver flags of the upstream token vault and the
// token exchange by which resource servers obtain a user's upstream token.
type vaultFlags struct {
	keys            listFlag
	audience        string
	resourceServers listFlag
}

func (v *vaultFlags) register(fs *flag.FlagSet) {
	fs.Var(&v.keys, "vault-key", "with --upstream: base64 of 32 random bytes sealing the upstream tokens at rest, as `env:VAR`; "+
		"repeat for rotation: the first seals, the others only open (default: a random key for this process, with a warning)")
	fs.StringVar(&v.audience, "upstream-audience", "", "with --upstream: the `NAME` resource servers give as the token exchange's audience "+
		"for the upstream token, e.g. github (the upstream issuer URL is always accepted)")
	fs.Var(&v.resourceServers, "exchange-client", "with --upstream: let the pre-registered confidential --client `ID=RESOURCE` "+
		"(with grant="+"urn:ietf:params:oauth:grant-type:token-exchange) exchange access tokens for RESOURCE for the user's upstream token (repeatable)")
}

// config returns the vault configuration: nil without an upstream, else a
// vault whose keys are read from the environment.
func (v *vaultFlags) config(upstream *upstreamConfig, getenv func(string) string) (*vaultConfig, error) {
	if upstream == nil {
		if len(v.keys) > 0 || v.audience != "" || len(v.resourceServers) > 0 {
			return nil, errors.New("--vault-key, --upstream-audience and --exchange-client need --upstream")
		}
		return nil, nil
	}
	c := &vaultConfig{Audience: v.audience}
	for _, spec := range v.keys {
		s, err := envSecret("--vault-key", spec, getenv)
		if err != nil {
			return nil, err
		}
		k, err := seal.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("--vault-key %s: want base64 of 32 random bytes", spec)
		}
		c.Keys = append(c.Keys, k)
	}
	for _, spec := range v.resourceServers {
		id, res, err := cutPair("--exchange-client", spec, "ID=RESOURCE")
		if err != nil {
			return nil, err
		}
		if c.ResourceServers == nil {
			c.ResourceServers = map[string]string{}
		}
		c.ResourceServers[id] = res
	}
	return c, nil
}
