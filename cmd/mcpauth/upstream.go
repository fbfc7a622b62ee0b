package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
)

// upstreamFlags are the authserver flags of the login at an upstream
// OpenID Connect provider.
type upstreamFlags struct {
	issuer, clientID, clientSecret, scopes, groupsClaim string
	clientKeyFile, clientKeyID                          string
	allowDomains, allowUsers, allowGroups               listFlag
	allowAnyUser, allowUnverifiedEmail                  bool
}

func (u *upstreamFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.issuer, "upstream", "", "log users in at this OpenID Connect provider `ISSUER_URL` (discovery from ISSUER_URL/.well-known/openid-configuration); register the callback URL printed at start there")
	fs.StringVar(&u.clientID, "upstream-client-id", "", "this server's client_id at the --upstream provider")
	fs.StringVar(&u.clientSecret, "upstream-client-secret", "", "this server's client secret at the --upstream provider, as `env:VAR` (never on the command line); omit for a public client")
	fs.StringVar(&u.clientKeyFile, "upstream-client-key", "", "authenticate at the --upstream provider with private_key_jwt, signing with the PEM private key in `FILE` (instead of --upstream-client-secret)")
	fs.StringVar(&u.clientKeyID, "upstream-client-key-id", "", "the \"kid\" of --upstream-client-key as registered at the provider")
	fs.StringVar(&u.scopes, "upstream-scopes", "", "scopes requested upstream, separated by spaces or commas; openid is always sent (default \"openid email profile\")")
	fs.StringVar(&u.groupsClaim, "upstream-groups-claim", authserver.DefaultUpstreamGroupsClaim, "ID token claim holding the user's groups, for --allow-group")
	fs.Var(&u.allowDomains, "allow-email-domain", "admit upstream users with a verified email at this `DOMAIN` (repeatable)")
	fs.Var(&u.allowUsers, "allow-user", "admit this upstream user, by verified `EMAIL` or by sub (an entry with @ is only an email; repeatable)")
	fs.Var(&u.allowGroups, "allow-group", "admit members of this upstream `GROUP` (repeatable)")
	fs.BoolVar(&u.allowAnyUser, "allow-any-user", false, "admit every user the --upstream provider authenticates")
	fs.BoolVar(&u.allowUnverifiedEmail, "insecure-allow-unverified-email", false, "let --allow-email-domain and --allow-user match emails the provider does not mark verified")
}

// config returns the upstream configuration, nil when --upstream is not
// given. insecureHTTP permits a plain-http provider on a loopback address.
func (u *upstreamFlags) config(insecureHTTP bool, getenv func(string) string) (*authserver.UpstreamConfig, error) {
	if u.issuer == "" {
		if u.clientID != "" || u.clientSecret != "" || u.clientKeyFile != "" || len(u.allowDomains)+len(u.allowUsers)+len(u.allowGroups) > 0 || u.allowAnyUser {
			return nil, errors.New("the --upstream-* and --allow-* flags need --upstream")
		}
		return nil, nil
	}
	c := &authserver.UpstreamConfig{
		Issuer: u.issuer, ClientID: u.clientID, Scopes: fields(u.scopes), GroupsClaim: u.groupsClaim,
		Allow: authserver.AllowList{
			EmailDomains: u.allowDomains, Users: u.allowUsers, Groups: u.allowGroups,
			AllowAnyUser: u.allowAnyUser, InsecureAllowUnverifiedEmail: u.allowUnverifiedEmail,
		},
	}
	c.Fetch.InsecureAllowHTTPLoopback = insecureHTTP
	if u.clientSecret != "" {
		if !strings.HasPrefix(u.clientSecret, "env:") {
			return nil, errors.New("--upstream-client-secret: give it as env:VAR, so it does not show in the process list")
		}
		s, err := secretValue("--upstream-client-secret", u.clientSecret, getenv)
		if err != nil {
			return nil, err
		}
		c.ClientSecret = s
	}
	if u.clientKeyFile != "" {
		pemData, err := os.ReadFile(u.clientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--upstream-client-key: %w", err)
		}
		if c.ClientKey, err = jwtassert.ParsePrivateKeyPEM(pemData); err != nil {
			return nil, fmt.Errorf("--upstream-client-key: %w", err)
		}
		c.ClientKeyID = u.clientKeyID
	}
	if c.Allow.EmailDomains == nil && c.Allow.Users == nil && c.Allow.Groups == nil && !c.Allow.AllowAnyUser {
		return nil, fmt.Errorf("--upstream: say who may log in with --allow-email-domain, --allow-user, --allow-group or --allow-any-user")
	}
	return c, nil
}
