package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
)

// upstreamConfig is the login the upstream flags configure: the
// provider, who may log in and what they may obtain.
type upstreamConfig struct {
	upstream.Config
	Allow       authserver.AllowList
	GrantPolicy *authserver.GrantPolicy
}

// upstreamFlags are the authserver flags of the login at an upstream
// identity provider: an OpenID Connect issuer, or a preset (github,
// google, entra).
type upstreamFlags struct {
	issuer, clientID, clientSecret, scopes, groupsClaim string
	clientKeyFile, clientKeyID, tenant                  string
	authURL, tokenURL, userInfoURL, emailsURL           string
	grantPolicy                                         string
	allowDomains, allowUsers, allowGroups               listFlag
	authParams, githubOrgs, githubTeams                 listFlag
	allowTenants                                        listFlag
	allowAnyUser, allowUnverifiedEmail                  bool
	// specs are the --upstream values (issuer is the last); realms the
	// --upstream-realm values. Several named providers: upstream_logins.go.
	specs  []string
	realms listFlag
}

func (u *upstreamFlags) register(fs *flag.FlagSet) {
	fs.Var(upstreamValue{u}, "upstream", upstreamHelp)
	fs.Var(&u.realms, "upstream-realm", "with several --upstream NAME=...: users with an email at `DOMAIN=NAME` log in at the provider NAME, without choosing (from the client's login_hint or the address typed on the choice page), and are refused at the others (repeatable)")
	fs.StringVar(&u.tenant, "upstream-tenant", "", "with --upstream entra: the directory (tenant) `ID` or domain, or organizations or common for a multi-tenant login (with --upstream-allow-tenant)")
	fs.Var(&u.allowTenants, "upstream-allow-tenant", "with --upstream entra --upstream-tenant organizations|common: admit users of the directory (tenant) with this `ID`, a GUID (repeatable; required, there is no \"any tenant\")")
	fs.StringVar(&u.authURL, "upstream-authorization-url", "", "with --upstream github: use this authorization endpoint `URL` instead of GitHub's (GitHub Enterprise Server, tests)")
	fs.StringVar(&u.tokenURL, "upstream-token-url", "", "with --upstream github: use this token endpoint `URL` instead of GitHub's")
	fs.StringVar(&u.userInfoURL, "upstream-userinfo-url", "", "with --upstream github: use this user-info `URL` instead of https://api.github.com/user")
	fs.StringVar(&u.emailsURL, "upstream-emails-url", "", "with --upstream github: use this `URL` instead of https://api.github.com/user/emails (same origin as the user-info URL)")
	fs.Var(&u.authParams, "upstream-auth-param", "send `NAME=VALUE` on the authorization request at the --upstream provider, replacing a preset's value of NAME (repeatable; google sets access_type=offline and prompt=consent); the login's own parameters (state, scope, redirect_uri...) are refused")
	fs.Var(&u.githubOrgs, "upstream-github-org", "with --upstream github: admit only members of this organisation `LOGIN` (or of a --upstream-github-team), checked at each login, asking for read:org (repeatable)")
	fs.Var(&u.githubTeams, "upstream-github-team", "with --upstream github: admit only members of this team, `ORG/TEAM-SLUG` (or of a --upstream-github-org), checked at each login, asking for read:org (repeatable)")
	fs.StringVar(&u.grantPolicy, "grant-policy", "", "with --upstream: which MCP scopes each user, group or email domain may obtain, from this JSON `FILE` (see README, \"Production login with your identity provider\")")
	fs.StringVar(&u.clientID, "upstream-client-id", "", "this server's client_id at the --upstream provider")
	fs.StringVar(&u.clientSecret, "upstream-client-secret", "", "this server's client secret at the --upstream provider, as `env:VAR` (never on the command line); omit for a public client")
	fs.StringVar(&u.clientKeyFile, "upstream-client-key", "", "authenticate at the --upstream provider with private_key_jwt, signing with the PEM private key in `FILE` (instead of --upstream-client-secret)")
	fs.StringVar(&u.clientKeyID, "upstream-client-key-id", "", "the \"kid\" of --upstream-client-key as registered at the provider")
	fs.StringVar(&u.scopes, "upstream-scopes", "", "scopes requested upstream, separated by spaces or commas; for OpenID Connect openid is always sent (default \"openid email profile\"; github: \"read:user user:email\")")
	fs.StringVar(&u.groupsClaim, "upstream-groups-claim", upstream.DefaultGroupsClaim, "ID token claim holding the user's groups, for --allow-group")
	fs.Var(&u.allowDomains, "allow-email-domain", "admit upstream users with a verified email at this `DOMAIN` (repeatable)")
	fs.Var(&u.allowUsers, "allow-user", "admit this upstream user, by verified `EMAIL` or by sub (with --upstream github: the numeric user id, not the login; an entry with @ is only an email; repeatable)")
	fs.Var(&u.allowGroups, "allow-group", "admit members of this upstream `GROUP` (repeatable)")
	fs.BoolVar(&u.allowAnyUser, "allow-any-user", false, "admit every user the --upstream provider authenticates")
	fs.BoolVar(&u.allowUnverifiedEmail, "insecure-allow-unverified-email", false, "let --allow-email-domain and --allow-user match emails the provider does not mark verified")
}

// config returns the upstream configuration, nil when --upstream is not
// given. insecureHTTP permits a plain-http provider on a loopback address.
func (u *upstreamFlags) config(insecureHTTP bool, getenv func(string) string) (*upstreamConfig, error) {
	switch {
	case len(u.specs) > 1 || u.several():
		return nil, errors.New("--upstream: for several providers, give each as NAME=PROVIDER,KEY=VALUE,...")
	case len(u.realms) > 0:
		return nil, errors.New("--upstream-realm needs several --upstream NAME=PROVIDER,...")
	}
	if u.issuer == "" {
		if u.clientID != "" || u.clientSecret != "" || u.clientKeyFile != "" || u.tenant != "" || u.grantPolicy != "" ||
			len(u.allowTenants) > 0 ||
			u.authURL+u.tokenURL+u.userInfoURL+u.emailsURL != "" || len(u.authParams)+len(u.githubOrgs)+len(u.githubTeams) > 0 ||
			len(u.allowDomains)+len(u.allowUsers)+len(u.allowGroups) > 0 || u.allowAnyUser {
			return nil, errors.New("the --upstream-*, --grant-policy and --allow-* flags need --upstream")
		}
		return nil, nil
	}
	p, err := upstream.Preset(u.issuer, u.tenant)
	if err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	switch {
	case p.MultiTenant != nil && len(u.allowTenants) == 0:
		return nil, fmt.Errorf("--upstream-tenant %s: name the tenants whose users may log in with --upstream-allow-tenant (there is no \"any tenant\")", u.tenant)
	case p.MultiTenant == nil && len(u.allowTenants) > 0:
		return nil, errors.New("--upstream-allow-tenant is for --upstream entra with --upstream-tenant organizations or common")
	case p.MultiTenant != nil:
		p.MultiTenant.Tenants = u.allowTenants
	}
	c := &upstreamConfig{Config: *p}
	if err := u.overrideEndpoints(&c.Config); err != nil {
		return nil, err
	}
	if err := u.addAuthParams(&c.Config); err != nil {
		return nil, err
	}
	if len(u.githubOrgs)+len(u.githubTeams) > 0 {
		if c.OAuth2 == nil {
			return nil, errors.New("--upstream-github-org and --upstream-github-team are for --upstream github only")
		}
		c.OAuth2.GitHubAllow = &upstream.GitHubAllow{Orgs: u.githubOrgs, Teams: u.githubTeams}
	}
	c.ClientID, c.GroupsClaim = u.clientID, u.groupsClaim
	if s := fields(u.scopes); len(s) > 0 {
		c.Scopes = s
	}
	c.Allow = authserver.AllowList{
		EmailDomains: u.allowDomains, Users: u.allowUsers, Groups: u.allowGroups,
		AllowAnyUser: u.allowAnyUser, InsecureAllowUnverifiedEmail: u.allowUnverifiedEmail,
	}
	if u.grantPolicy != "" {
		if c.GrantPolicy, err = parseFile("--grant-policy", u.grantPolicy, authserver.ParseGrantPolicy); err != nil {
			return nil, err
		}
	}
	c.InsecureAllowHTTPLoopback = insecureHTTP
	if u.clientSecret != "" {
		if c.ClientSecret, err = envSecret("--upstream-client-secret", u.clientSecret, getenv); err != nil {
			return nil, err
		}
	}
	if u.clientKeyFile != "" {
		if c.ClientKey, err = parseFile("--upstream-client-key", u.clientKeyFile, jwtassert.ParsePrivateKeyPEM); err != nil {
			return nil, err
		}
		c.ClientKeyID = u.clientKeyID
	}
	if c.Allow.EmailDomains == nil && c.Allow.Users == nil && c.Allow.Groups == nil && !c.Allow.AllowAnyUser {
		return nil, fmt.Errorf("--upstream: say who may log in with --allow-email-domain, --allow-user, --allow-group or --allow-any-user")
	}
	return c, nil
}

// addAuthParams adds the --upstream-auth-param parameters to c's,
// replacing a preset's value of the same name. upstream.New refuses the
// login's own parameters.
func (u *upstreamFlags) addAuthParams(c *upstream.Config) error {
	if len(u.authParams) == 0 {
		return nil
	}
	params := maps.Clone(c.AuthParams)
	if params == nil {
		params = map[string]string{}
	}
	for _, p := range u.authParams {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return fmt.Errorf("--upstream-auth-param: %.60q is not NAME=VALUE", p)
		}
		params[name] = value
	}
	c.AuthParams = params
	return nil
}

// overrideEndpoints replaces the github preset's endpoints with those
// given on the command line; they exist for no other upstream.
func (u *upstreamFlags) overrideEndpoints(c *upstream.Config) error {
	if u.authURL+u.tokenURL+u.userInfoURL+u.emailsURL == "" {
		return nil
	}
	if c.OAuth2 == nil {
		return errors.New("--upstream-authorization-url, --upstream-token-url, --upstream-userinfo-url and --upstream-emails-url are for --upstream github only (an OpenID Connect provider's come from discovery)")
	}
	for dst, v := range map[*string]string{
		&c.OAuth2.AuthorizationEndpoint: u.authURL, &c.OAuth2.TokenEndpoint: u.tokenURL,
		&c.OAuth2.UserInfoEndpoint: u.userInfoURL, &c.OAuth2.EmailsEndpoint: u.emailsURL,
	} {
		if v != "" {
			*dst = v
		}
	}
	return nil
}

// login sets cfg's login at the upstream provider, its allow-list, grant
// policy and token vault from the upstream and vault flags; nothing
// without --upstream. The provider does no I/O until the first login;
// closeLogin stops its background work.
func (f *authserverFlags) login(cfg *authserver.Config, logger *slog.Logger) error {
	if f.upstream.several() {
		return f.severalLogins(cfg, logger, os.Getenv)
	}
	u, err := f.upstream.config(f.insecureHTTP, os.Getenv)
	if err != nil {
		return err
	}
	v, err := f.vault.config(u, os.Getenv)
	if err == nil && u == nil && f.connect.set() {
		err = errConnectNeedsUpstream
	}
	if err != nil || u == nil {
		return err
	}
	p, err := upstream.New(u.Config)
	if err != nil {
		return err
	}
	cfg.Login, cfg.Allow, cfg.GrantPolicy = p, u.Allow, u.GrantPolicy
	cfg.Vault = upstream.VaultConfig{Keys: v.Keys, Provider: p, Logger: logger}.Open
	cfg.VaultAudience, cfg.VaultResourceServers = v.Audience, v.ResourceServers
	cfg.Connect, err = f.connect.config(f.insecureHTTP, v.Keys, logger, os.Getenv)
	return err
}

// closeLogin stops the background work of cfg's login, if any.
func closeLogin(cfg *authserver.Config) {
	if c, ok := cfg.Login.(io.Closer); ok {
		_ = c.Close()
	}
	closeLogins(cfg)
	closeConnect(cfg.Connect)
}
