package upstream

import (
	"fmt"
	"net/url"
	"regexp"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Preset names for [Preset].
const (
	PresetGitHub = "github"
	PresetGoogle = "google"
	PresetEntra  = "entra"
)

// entraIssuerTemplate is the issuer of Entra ID's multi-tenant metadata.
const entraIssuerTemplate = "https://login.microsoftonline.com/" + TenantPlaceholder + "/v2.0"

// entraTenant is a directory (tenant) ID or a verified domain name.
var entraTenant = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

// Preset returns a [Config] with the provider-specific
// fields filled, and nothing else: the caller adds ClientID, a secret or
// key (and the server its allow-list). A preset does no I/O; any field it fills may be
// overridden afterwards (a test points the GitHub endpoints at a fake).
//
//   - "github": plain OAuth 2.0 ([OAuth2Endpoints]) at
//     https://github.com/login/oauth/authorize and
//     https://github.com/login/oauth/access_token (client_secret_post, JSON
//     asked for), the user from https://api.github.com/user (identifier
//     "id", name "login") and the primary email from
//     https://api.github.com/user/emails, scopes "read:user user:email",
//     Issuer "https://github.com". GitHub has no groups claim.
//   - "google": OpenID Connect, issuer https://accounts.google.com, with
//     [Config.AuthParams] access_type=offline and prompt=consent: Google
//     returns a refresh token only for access_type=offline, and only at
//     the consent prompt, so without them the token vault could not
//     refresh the user's token ("Authentication URI parameters" and
//     "Refresh tokens" in Google's OpenID Connect documentation,
//     https://developers.google.com/identity/openid-connect/openid-connect).
//   - "entra": OpenID Connect, issuer
//     https://login.microsoftonline.com/TENANT/v2.0 with tenant (a
//     directory ID or domain; required, and not "consumers"). Entra ID
//     tokens carry no email_verified: admit by groups or users instead.
//     With tenant "organizations" or "common" the login is multi-tenant:
//     discovery there, [Config.MultiTenant] with the issuer template
//     https://login.microsoftonline.com/{tenantid}/v2.0, and the caller
//     must add the allowed tenant IDs to MultiTenant.Tenants.
//   - anything else must be the https URL of an OpenID Connect issuer,
//     used as is.
//
// tenant must be empty for every preset but "entra". Errors match
// [authserver.ErrConfig].
func Preset(name, tenant string) (*Config, error) {
	if tenant != "" && name != PresetEntra {
		return nil, configErr("Upstream", "a tenant is only for the entra preset")
	}
	switch name {
	case PresetGitHub:
		return &Config{
			Issuer: "https://github.com",
			Scopes: []string{"read:user", "user:email"},
			OAuth2: &OAuth2Endpoints{
				AuthorizationEndpoint:   "https://github.com/login/oauth/authorize",
				TokenEndpoint:           "https://github.com/login/oauth/access_token",
				TokenEndpointAuthMethod: oauthmeta.AuthMethodClientSecretPost,
				UserInfoEndpoint:        "https://api.github.com/user",
				EmailsEndpoint:          "https://api.github.com/user/emails",
				IDField:                 "id",
				NameField:               "login",
				EmailField:              "email",
			},
		}, nil
	case PresetGoogle:
		return &Config{Issuer: "https://accounts.google.com",
			AuthParams: map[string]string{"access_type": "offline", "prompt": "consent"}}, nil
	case PresetEntra:
		switch ascii.ToLower(tenant) {
		case "":
			return nil, configErr("Upstream", "the entra preset needs a tenant (directory ID or domain)")
		case "common", "organizations":
			return &Config{
				Issuer:      "https://login.microsoftonline.com/" + ascii.ToLower(tenant) + "/v2.0",
				MultiTenant: &MultiTenant{IssuerTemplate: entraIssuerTemplate},
			}, nil
		case "consumers":
			return nil, configErr("Upstream", "the entra preset does not log in personal Microsoft accounts (consumers)")
		}
		if !entraTenant.MatchString(tenant) {
			return nil, configErr("Upstream", "the entra tenant must be a directory ID or a domain name")
		}
		return &Config{Issuer: "https://login.microsoftonline.com/" + tenant + "/v2.0"}, nil
	}
	u, err := url.Parse(name)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return nil, configErr("Upstream", fmt.Sprintf("%.60q is neither github, google, entra nor an issuer URL", name))
	}
	return &Config{Issuer: name}, nil
}
