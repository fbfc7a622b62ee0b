package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
)

// upstreamValue is the --upstream flag: given once, the provider of the
// single login (the other --upstream-* and --allow-* flags configure it);
// given as NAME=PROVIDER,KEY=VALUE,..., one of several named providers,
// each configured inside its own value (see severalLogins).
type upstreamValue struct{ u *upstreamFlags }

func (v upstreamValue) String() string {
	if v.u == nil {
		return ""
	}
	return strings.Join(v.u.specs, " ")
}

func (v upstreamValue) Set(s string) error {
	v.u.specs = append(v.u.specs, s)
	v.u.issuer = s
	return nil
}

// namedUpstream is the start of a named --upstream value: "NAME=".
var namedUpstream = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}=`)

// several reports whether --upstream names its providers.
func (u *upstreamFlags) several() bool {
	for _, s := range u.specs {
		if namedUpstream.MatchString(s) {
			return true
		}
	}
	return false
}

// upstreamHelp is the usage of --upstream.
const upstreamHelp = "log users in at `github|google|entra|ISSUER_URL`: GitHub (plain OAuth 2.0), Google, Microsoft Entra ID (with --upstream-tenant) or any OpenID Connect issuer (discovery from ISSUER_URL/.well-known/openid-configuration); register the callback URL printed at start there. " +
	"Repeat it as NAME=PROVIDER,KEY=VALUE,... for several providers the user chooses among, each KEY a flag of that provider without its leading --upstream- or -- " +
	"(client-id=ID,client-secret=env:VAR,allow-email-domain=DOMAIN,label=TEXT,...)"

// severalLogins sets cfg's providers from the named --upstream values,
// the home realms from --upstream-realm, and the token vault of them all.
// Each value is NAME=PROVIDER followed by comma-separated KEY=VALUE
// settings, each KEY the name of a single-provider flag without its
// leading "upstream-" ("client-id", "tenant", "auth-param") or as it is
// ("allow-email-domain", "grant-policy"), and "label", the text of its
// button; a boolean flag stands alone ("allow-any-user"). So the rules
// and messages of one provider are those of the single-provider flags.
func (f *authserverFlags) severalLogins(cfg *authserver.Config, logger *slog.Logger, getenv func(string) string) error {
	u := &f.upstream
	if err := u.onlyNamed(); err != nil {
		return err
	}
	var providers []upstream.Provider
	defer func() {
		if cfg.Logins == nil {
			for _, p := range providers {
				_ = p.Close()
			}
		}
	}()
	var logins []authserver.LoginProvider
	for _, spec := range u.specs {
		name, rest, _ := strings.Cut(spec, "=")
		c, label, err := parseNamedUpstream(name, rest, f.insecureHTTP, getenv)
		if err != nil {
			return err
		}
		p, err := upstream.New(c.Config)
		if err != nil {
			return fmt.Errorf("--upstream %s: %w", name, err)
		}
		providers = append(providers, p)
		logins = append(logins, authserver.LoginProvider{Name: name, Label: label, Login: p, Allow: c.Allow, GrantPolicy: c.GrantPolicy})
	}
	realms := map[string]string{}
	for _, r := range u.realms {
		domain, name, err := cutPair("--upstream-realm", r, "DOMAIN=NAME")
		if err != nil {
			return err
		}
		if _, dup := realms[domain]; dup {
			return fmt.Errorf("--upstream-realm: %.80q appears twice", domain)
		}
		realms[domain] = name
	}
	v, err := f.vault.config(&upstreamConfig{}, getenv)
	if err != nil {
		return err
	}
	if len(realms) > 0 {
		cfg.HomeRealms = realms
	}
	cfg.Logins = logins
	cfg.Vault = upstream.VaultConfig{Keys: v.Keys, Providers: providers, Logger: logger}.Open
	cfg.VaultAudience, cfg.VaultResourceServers = v.Audience, v.ResourceServers
	return nil
}

// onlyNamed checks that with named --upstream values every one is named
// and no provider is configured outside them.
func (u *upstreamFlags) onlyNamed() error {
	for _, s := range u.specs {
		if !namedUpstream.MatchString(s) {
			return fmt.Errorf("--upstream %.60q: with several providers, each is NAME=PROVIDER,...", s)
		}
	}
	if u.clientID != "" || u.clientSecret != "" || u.clientKeyFile != "" || u.clientKeyID != "" || u.tenant != "" ||
		u.grantPolicy != "" || u.scopes != "" || u.groupsClaim != upstream.DefaultGroupsClaim ||
		u.authURL+u.tokenURL+u.userInfoURL+u.emailsURL != "" ||
		len(u.allowTenants)+len(u.authParams)+len(u.githubOrgs)+len(u.githubTeams) > 0 ||
		len(u.allowDomains)+len(u.allowUsers)+len(u.allowGroups) > 0 || u.allowAnyUser || u.allowUnverifiedEmail {
		return errors.New("with several --upstream NAME=PROVIDER,..., give each provider's settings inside its value, not as --upstream-*, --grant-policy or --allow-* flags")
	}
	return nil
}

// parseNamedUpstream parses the settings of the named provider name
// (PROVIDER,KEY=VALUE,...) with the single-provider flags and their rules.
func parseNamedUpstream(name, spec string, insecureHTTP bool, getenv func(string) string) (*upstreamConfig, string, error) {
	sub := &upstreamFlags{}
	fs := flag.NewFlagSet("--upstream "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sub.register(fs)
	parts := strings.Split(spec, ",")
	if parts[0] == "" || strings.Contains(parts[0], "=") {
		return nil, "", fmt.Errorf("--upstream %s: want %s=PROVIDER,KEY=VALUE,... (PROVIDER github|google|entra|ISSUER_URL)", name, name)
	}
	sub.issuer, sub.specs = parts[0], parts[:1]
	var label string
	for _, kv := range parts[1:] {
		key, value, hasValue := strings.Cut(kv, "=")
		if key == "label" {
			label = value
			continue
		}
		fl := fs.Lookup("upstream-" + key)
		if fl == nil && !strings.HasPrefix(key, "upstream") {
			fl = fs.Lookup(key)
		}
		if fl == nil || fl.Name == "upstream" || fl.Name == "upstream-realm" {
			return nil, "", fmt.Errorf("--upstream %s: unknown setting %.40q", name, key)
		}
		if !hasValue {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				return nil, "", fmt.Errorf("--upstream %s: %s needs a value (%s=VALUE)", name, key, key)
			}
			value = "true"
		}
		if err := fs.Set(fl.Name, value); err != nil {
			return nil, "", fmt.Errorf("--upstream %s: %s: %w", name, key, err)
		}
	}
	c, err := sub.config(insecureHTTP, getenv)
	if err != nil {
		return nil, "", fmt.Errorf("--upstream %s: %w", name, err)
	}
	return c, label, nil
}

// closeLogins stops the background work of cfg's several providers.
func closeLogins(cfg *authserver.Config) {
	for _, l := range cfg.Logins {
		if c, ok := l.Login.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// printLogins tells where to register each provider's redirect URI.
func printLogins(stdout io.Writer, logger *slog.Logger, as *authserver.Server, cfg *authserver.Config) {
	for _, l := range cfg.Logins {
		cb := as.UpstreamCallbackURLFor(l.Name)
		logger.Info("users log in upstream", "provider", l.Name, "upstream", l.Login.Issuer(), "callback", cb)
		fmt.Fprintf(stdout, "upstream login %s at %s; register this redirect URI there: %s\n", l.Name, l.Login.Issuer(), cb)
	}
}
