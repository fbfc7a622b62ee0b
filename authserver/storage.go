package authserver

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// openStorage fills s.store: the configured stores, then memory for the
// rest, and collects the distinct sweepers.
func (s *Server) openStorage() {
	base := NewMemoryStore().Storage()
	st := s.cfg.Storage
	s.store = Storage{
		Clients:        cmp.Or(st.Clients, base.Clients),
		Codes:          cmp.Or(st.Codes, base.Codes),
		Grants:         cmp.Or(st.Grants, base.Grants),
		RefreshTokens:  cmp.Or(st.RefreshTokens, base.RefreshTokens),
		Consents:       cmp.Or(st.Consents, base.Consents),
		Keys:           cmp.Or(st.Keys, base.Keys),
		Revocations:    cmp.Or(st.Revocations, base.Revocations),
		Pending:        cmp.Or(st.Pending, base.Pending),
		UpstreamTokens: cmp.Or(st.UpstreamTokens, base.UpstreamTokens),
		Connect:        cmp.Or(st.Connect, base.Connect),
		Devices:        cmp.Or(st.Devices, base.Devices),
	}
	s.sweepers = distinctSweepers(s.store.Clients, s.store.Codes, s.store.Grants, s.store.RefreshTokens,
		s.store.Consents, s.store.Keys, s.store.Revocations, s.store.Pending, s.store.UpstreamTokens,
		s.store.Connect, s.store.Devices)
}

// distinctSweepers returns the stores that implement Sweeper, each once
// (one store usually implements every interface).
func distinctSweepers(stores ...any) []Sweeper {
	var out []Sweeper
	var seen []uintptr
	for _, st := range stores {
		sw, ok := st.(Sweeper)
		if !ok {
			continue
		}
		if v := reflect.ValueOf(st); v.Kind() == reflect.Pointer {
			p := v.Pointer()
			if slices.Contains(seen, p) {
				continue
			}
			seen = append(seen, p)
		}
		out = append(out, sw)
	}
	return out
}

// staticClient validates a pre-registered client and returns its stored
// form, with the secret hashed.
func staticClient(c *Client, supported []string, now time.Time) (*Client, error) {
	field := "Clients[" + c.ID + "]"
	if c.ID == "" || len(c.ID) > 256 || strings.ContainsAny(c.ID, " \t\r\n") {
		return nil, configErr("Clients", "every client needs an ID without spaces")
	}
	if clientmeta.IsURLClientID(c.ID) {
		return nil, configErr(field, "a registered client_id must not look like a metadata document URL")
	}
	codeFlow := len(c.GrantTypes) == 0 || slices.Contains(c.GrantTypes, oauthmeta.GrantTypeAuthorizationCode)
	if len(c.RedirectURIs) == 0 && codeFlow {
		return nil, configErr(field, "at least one redirect URI is required")
	}
	if slices.ContainsFunc(c.RedirectURIs, func(r string) bool { return clientmeta.CheckRedirectURI(r) != nil }) {
		return nil, configErr(field, "invalid redirect URI")
	}
	if !subset(c.AllowedScopes, supported) {
		return nil, configErr(field, "every AllowedScopes entry must be in Scopes")
	}
	for _, sc := range c.DefaultScopes {
		if !slices.Contains(supported, sc) || !c.allowsScope(sc) {
			return nil, configErr(field, "every DefaultScopes entry must be in Scopes and AllowedScopes")
		}
	}
	out := cloneClient(c)
	out.Kind, out.CreatedAt = ClientStatic, now
	if c.Secret != "" {
		out.SecretHash = hashSecret(c.Secret)
	}
	if err := staticAuthMethod(out, c.Secret, field); err != nil {
		return nil, err
	}
	if len(out.GrantTypes) == 0 {
		out.GrantTypes = []string{oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken}
	}
	for _, g := range out.GrantTypes {
		switch g {
		case oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken, oauthmeta.GrantTypeJWTBearer,
			oauthmeta.GrantTypeTokenExchange, oauthmeta.GrantTypeDeviceCode:
		case oauthmeta.GrantTypeClientCredentials:
			if out.public() {
				return nil, configErr(field, "client_credentials needs a confidential client")
			}
		default:
			return nil, configErr(field, "unsupported grant type")
		}
	}
	return out, nil
}

// staticAuthMethod settles a pre-registered client's token endpoint
// authentication method and checks its credentials.
func staticAuthMethod(out *Client, secret, field string) error {
	hasKeys := len(out.JWKS) > 0 || out.JWKSURI != ""
	if len(out.JWKS) > 0 && out.JWKSURI != "" {
		return configErr(field, "at most one of JWKS and JWKSURI")
	}
	if len(out.JWKS) > 0 {
		if _, err := jwkset.Parse(out.JWKS); err != nil {
			return configErr(field, "JWKS: "+err.Error())
		}
	}
	switch out.AuthMethod {
	case "":
		switch {
		case hasKeys:
			out.AuthMethod = oauthmeta.AuthMethodPrivateKeyJWT
		case secret != "":
			out.AuthMethod = oauthmeta.AuthMethodClientSecretBasic
		default:
			out.AuthMethod = oauthmeta.AuthMethodNone
		}
	case oauthmeta.AuthMethodNone:
		if secret != "" {
			return configErr(field, `a client with a secret cannot use "none"`)
		}
	case oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
		if secret == "" {
			return configErr(field, "a secret is required for "+out.AuthMethod)
		}
	case oauthmeta.AuthMethodPrivateKeyJWT:
		if !hasKeys {
			return configErr(field, "private_key_jwt needs JWKS or JWKSURI")
		}
	default:
		return configErr(field, "unsupported token endpoint auth method")
	}
	if out.AuthMethod == oauthmeta.AuthMethodPrivateKeyJWT && secret != "" {
		return configErr(field, "private_key_jwt clients have no secret")
	}
	return nil
}
