package authserver

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Registration limits.
const (
	maxRegisteredRedirects = 16
	maxClientNameLength    = 200
	dynamicClientIDPrefix  = "dyn_"
)

// registrationResponse is the RFC 7591 §3.2.1 answer. client_secret_expires_at
// is REQUIRED whenever a secret is issued, even when it is 0 (never).
type registrationResponse struct {
	oauthmeta.ClientInformation
	ClientSecretExpiresAt *int64 `json:"client_secret_expires_at,omitempty"`
}

// registration is the Dynamic Client Registration endpoint: it stores the
// clients it registers in the client store, where the client registry
// finds them.
type registration struct {
	store   ClientStore
	scopes  *scopePolicy
	maxBody int64
	errs    *errorWriter
	clock   clock.Func
	log     *slog.Logger
}

// handleRegister is the Dynamic Client Registration endpoint (RFC 7591,
// deprecated in MCP 2026-07-28 but still used; requirements AS-16, AS-17).
// Minted client_ids are random and never look like a URL. A registered
// "scope" becomes the client's default scopes, not a ceiling (see
// scopes.go); the response's "scope" is the effective default.
func (g *registration) handleRegister(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		g.errs.write(w, r, oauthErr(oauthmeta.CodeInvalidClientMetadata, "body must be application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			g.errs.write(w, r, oauthErr(oauthmeta.CodeInvalidClientMetadata, "request body too large"))
			return
		}
		g.errs.write(w, r, oauthErr(oauthmeta.CodeInvalidClientMetadata, "unreadable body"))
		return
	}
	var md oauthmeta.ClientMetadata
	if err := jsonx.DecodeObject(body, &md); err != nil {
		g.errs.write(w, r, oauthErr(oauthmeta.CodeInvalidClientMetadata, "body is not a valid client metadata object"))
		return
	}
	if oe := g.normalize(&md); oe != nil {
		g.errs.write(w, r, oe)
		return
	}
	now := g.clock.Now()
	c := &Client{
		ID: dynamicClientIDPrefix + randomToken(16), Name: md.ClientName, RedirectURIs: md.RedirectURIs,
		AuthMethod: md.TokenEndpointAuthMethod, GrantTypes: md.GrantTypes, ApplicationType: md.ApplicationType,
		Kind: ClientDynamic, CreatedAt: now,
	}
	c.DefaultScopes, _ = g.scopes.registered(md.Scope) // checked by normalize
	md.Scope = oauthmeta.FormatScope(g.scopes.defaultsOf(c))
	resp := registrationResponse{ClientInformation: oauthmeta.ClientInformation{
		ClientID: c.ID, ClientIDIssuedAt: now.Unix(), ClientMetadata: md,
	}}
	if !c.public() {
		resp.ClientSecret = randomToken(32)
		c.SecretHash = hashSecret(resp.ClientSecret)
		resp.ClientSecretExpiresAt = new(int64) // 0: never expires
	}
	if err := g.store.SaveClient(r.Context(), c); err != nil {
		g.errs.write(w, r, err)
		return
	}
	g.log.InfoContext(r.Context(), "client registered", "client_id", c.ID, "application_type", c.ApplicationType)
	writeJSON(w, http.StatusCreated, &resp)
}

// normalize validates registration metadata and fills in the
// RFC 7591 defaults, so the response echoes what was registered.
func (g *registration) normalize(md *oauthmeta.ClientMetadata) *oauthmeta.Error {
	invalid := func(desc string) *oauthmeta.Error { return oauthErr(oauthmeta.CodeInvalidClientMetadata, desc) }
	if len(md.RedirectURIs) == 0 || len(md.RedirectURIs) > maxRegisteredRedirects {
		return oauthErr(oauthmeta.CodeInvalidRedirectURI, "between 1 and 16 redirect_uris are required")
	}
	if slices.ContainsFunc(md.RedirectURIs, func(ru string) bool { return clientmeta.CheckRedirectURI(ru) != nil }) {
		return oauthErr(oauthmeta.CodeInvalidRedirectURI, "a redirect URI is invalid")
	}
	if oe := checkApplicationType(md); oe != nil {
		return oe
	}
	switch md.TokenEndpointAuthMethod {
	case "":
		md.TokenEndpointAuthMethod = oauthmeta.AuthMethodClientSecretBasic
	case oauthmeta.AuthMethodNone, oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
	default:
		return invalid("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	if len(md.GrantTypes) == 0 {
		md.GrantTypes = []string{oauthmeta.GrantTypeAuthorizationCode}
	}
	if slices.ContainsFunc(md.GrantTypes, func(g string) bool {
		return g != oauthmeta.GrantTypeAuthorizationCode && g != oauthmeta.GrantTypeRefreshToken &&
			g != oauthmeta.GrantTypeDeviceCode
	}) {
		return invalid("grant_types may contain only authorization_code, refresh_token and device_code")
	}
	if len(md.ResponseTypes) == 0 {
		md.ResponseTypes = []string{"code"}
	}
	if slices.ContainsFunc(md.ResponseTypes, func(rt string) bool { return rt != "code" }) {
		return invalid("response_types may contain only code")
	}
	if len(md.JWKS) > 0 || md.JWKSURI != "" {
		return invalid("jwks and jwks_uri are not supported")
	}
	if len(md.ClientName) > maxClientNameLength {
		return invalid("client_name is too long")
	}
	if _, err := g.scopes.registered(md.Scope); err != nil {
		return invalid("malformed scope")
	}
	strict := oauthmeta.URLPolicy{}
	for _, u := range []string{md.ClientURI, md.LogoURI, md.TOSURI, md.PolicyURI} {
		if u != "" && strict.CheckURL(u) != nil {
			return invalid("client_uri, logo_uri, tos_uri and policy_uri must be https URLs")
		}
	}
	return nil
}

// checkApplicationType honours application_type (OpenID Connect
// Registration §2; MCP SEP-837): web clients redirect to https on a real
// host, native clients to loopback, a private-use scheme or https. An absent
// value is inferred from the redirect URIs, for hosts written before SEP-837.
func checkApplicationType(md *oauthmeta.ClientMetadata) *oauthmeta.Error {
	allWeb := !slices.ContainsFunc(md.RedirectURIs, func(ru string) bool {
		u, err := url.Parse(ru)
		return err != nil || u.Scheme != "https" || oauthmeta.IsLoopbackHost(u.Hostname())
	})
	switch md.ApplicationType {
	case "":
		md.ApplicationType = "native"
		if allWeb {
			md.ApplicationType = "web"
		}
	case "web":
		if !allWeb {
			return oauthErr(oauthmeta.CodeInvalidRedirectURI, "web clients must use https redirect URIs on a non-loopback host")
		}
	case "native":
	default:
		return oauthErr(oauthmeta.CodeInvalidClientMetadata, "application_type must be web or native")
	}
	return nil
}
