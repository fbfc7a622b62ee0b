package oauthmeta

import (
	"fmt"
	"slices"
	"strings"
)

// Well-known path suffixes for authorization server metadata.
const (
	// WellKnownOAuthAuthorizationServer is the RFC 8414 §3 suffix.
	WellKnownOAuthAuthorizationServer = "/.well-known/oauth-authorization-server"
	// WellKnownOpenIDConfiguration is the OpenID Connect Discovery 1.0 §4
	// suffix.
	WellKnownOpenIDConfiguration = "/.well-known/openid-configuration"
)

// PKCEMethodS256 is the only PKCE code challenge method MCP permits.
const PKCEMethodS256 = "S256"

// GrantProfileIDJAG is the authorization grant profile of the Identity
// Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-
// authz-grant §7.2), which an authorization server that accepts ID-JAGs
// with the JWT-bearer grant lists in "authorization_grant_profiles_supported"
// (the MCP Enterprise-Managed Authorization extension, §6).
const GrantProfileIDJAG = "urn:ietf:params:oauth:grant-profile:id-jag"

// AuthServerMetadata is the RFC 8414 §2 OAuth 2.0 Authorization Server
// Metadata document, which OpenID Connect Discovery 1.0 extends; the members
// MCP uses are typed, the rest are ignored when decoding.
type AuthServerMetadata struct {
	// Issuer is "issuer" (§2). REQUIRED; https, no query or fragment, and
	// identical to the issuer the document was fetched for (§3.3).
	Issuer string `json:"issuer"`
	// AuthorizationEndpoint is "authorization_endpoint" (§2). REQUIRED for
	// the authorization code grant.
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
	// TokenEndpoint is "token_endpoint" (§2). REQUIRED unless only the
	// implicit grant is supported.
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// JWKSURI is "jwks_uri" (§2). OPTIONAL.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// RegistrationEndpoint is "registration_endpoint" (§2, RFC 7591).
	// OPTIONAL.
	RegistrationEndpoint string `json:"registration_endpoint,omitempty"`
	// ScopesSupported is "scopes_supported" (§2). RECOMMENDED.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// ResponseTypesSupported is "response_types_supported" (§2). REQUIRED;
	// MCP needs "code".
	ResponseTypesSupported []string `json:"response_types_supported,omitempty"`
	// ResponseModesSupported is "response_modes_supported" (§2). OPTIONAL.
	ResponseModesSupported []string `json:"response_modes_supported,omitempty"`
	// GrantTypesSupported is "grant_types_supported" (§2). OPTIONAL; absent
	// means ["authorization_code", "implicit"].
	GrantTypesSupported []string `json:"grant_types_supported,omitempty"`
	// TokenEndpointAuthMethodsSupported is
	// "token_endpoint_auth_methods_supported" (§2). OPTIONAL; absent means
	// ["client_secret_basic"].
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	// TokenEndpointAuthSigningAlgValuesSupported is
	// "token_endpoint_auth_signing_alg_values_supported" (§2). OPTIONAL.
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	// ServiceDocumentation is "service_documentation" (§2). OPTIONAL.
	ServiceDocumentation string `json:"service_documentation,omitempty"`
	// RevocationEndpoint is "revocation_endpoint" (§2, RFC 7009). OPTIONAL.
	RevocationEndpoint string `json:"revocation_endpoint,omitempty"`
	// RevocationEndpointAuthMethodsSupported is
	// "revocation_endpoint_auth_methods_supported" (§2). OPTIONAL.
	RevocationEndpointAuthMethodsSupported []string `json:"revocation_endpoint_auth_methods_supported,omitempty"`
	// IntrospectionEndpoint is "introspection_endpoint" (§2, RFC 7662).
	// OPTIONAL.
	IntrospectionEndpoint string `json:"introspection_endpoint,omitempty"`
	// IntrospectionEndpointAuthMethodsSupported is
	// "introspection_endpoint_auth_methods_supported" (§2). OPTIONAL.
	IntrospectionEndpointAuthMethodsSupported []string `json:"introspection_endpoint_auth_methods_supported,omitempty"`
	// CodeChallengeMethodsSupported is "code_challenge_methods_supported"
	// (§2, RFC 7636). OPTIONAL in RFC 8414; MCP clients MUST refuse an
	// authorization server without it.
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported,omitempty"`
	// AuthorizationResponseISSParameterSupported is
	// "authorization_response_iss_parameter_supported" (RFC 9207 §3).
	// OPTIONAL; false when absent.
	AuthorizationResponseISSParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`
	// ClientIDMetadataDocumentSupported is
	// "client_id_metadata_document_supported" (draft-ietf-oauth-client-id-
	// metadata-document §4). OPTIONAL; false when absent.
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported,omitempty"`
	// DPoPSigningAlgValuesSupported is "dpop_signing_alg_values_supported"
	// (RFC 9449 §5.1). OPTIONAL.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// UserinfoEndpoint is "userinfo_endpoint" (OpenID Connect Discovery 1.0
	// §3). OPTIONAL; informational only.
	UserinfoEndpoint string `json:"userinfo_endpoint,omitempty"`
	// AuthorizationGrantProfilesSupported is
	// "authorization_grant_profiles_supported"
	// (draft-ietf-oauth-identity-assertion-authz-grant §7.2): the
	// authorization grant profiles the token endpoint accepts, such as
	// [GrantProfileIDJAG]. OPTIONAL.
	AuthorizationGrantProfilesSupported []string `json:"authorization_grant_profiles_supported,omitempty"`
	// DeviceAuthorizationEndpoint is "device_authorization_endpoint" (RFC
	// 8628 §4). OPTIONAL.
	DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint,omitempty"`
}

// AuthServerMetadataURLs returns the metadata URLs to probe for issuer, in
// the order MCP 2026-07-28 requires:
//
// For an issuer with a path, such as https://a/tenant1:
//
//	https://a/.well-known/oauth-authorization-server/tenant1
//	https://a/.well-known/openid-configuration/tenant1
//	https://a/tenant1/.well-known/openid-configuration
//
// For an issuer without a path:
//
//	https://a/.well-known/oauth-authorization-server
//	https://a/.well-known/openid-configuration
//
// A terminating "/" of the path is removed before inserting (RFC 8414 §3.1).
func AuthServerMetadataURLs(issuer string) ([]string, error) {
	u, err := parseIdentifierURL(issuer, ErrInvalidIssuer)
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, errField(ErrInvalidIssuer, "issuer", "query")
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{
			origin + WellKnownOAuthAuthorizationServer,
			origin + WellKnownOpenIDConfiguration,
		}, nil
	}
	return []string{
		origin + WellKnownOAuthAuthorizationServer + path,
		origin + WellKnownOpenIDConfiguration + path,
		origin + path + WellKnownOpenIDConfiguration,
	}, nil
}

// ParseAuthServerMetadata decodes an RFC 8414 or OpenID Connect Discovery
// document strictly and checks that "issuer" is present. Use
// [AuthServerMetadata.Validate] before trusting its contents.
func ParseAuthServerMetadata(data []byte) (*AuthServerMetadata, error) {
	var m AuthServerMetadata
	if err := DecodeJSON(data, &m); err != nil {
		return nil, err
	}
	if m.Issuer == "" {
		return nil, errField(ErrMissingField, "issuer", "")
	}
	return &m, nil
}

// Validate applies the rules a client must check before using the document
// (RFC 8414 §3.3):
//   - "issuer" is identical, by simple string comparison, to expected, and a
//     valid issuer identifier under p;
//   - authorization_endpoint and token_endpoint are present, and they and
//     every other endpoint present are acceptable URLs under p.
//
// It does not require PKCE; see [AuthServerMetadata.SupportsS256].
func (m *AuthServerMetadata) Validate(expected string, p URLPolicy) error {
	if m.Issuer != expected {
		return errField(ErrIssuerMismatch, "issuer", "not identical to the issuer requested")
	}
	if err := p.CheckIssuer(m.Issuer); err != nil {
		return err
	}
	if m.AuthorizationEndpoint == "" {
		return errField(ErrMissingField, "authorization_endpoint", "")
	}
	if m.TokenEndpoint == "" {
		return errField(ErrMissingField, "token_endpoint", "")
	}
	for _, ep := range []struct{ name, value string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"jwks_uri", m.JWKSURI},
		{"registration_endpoint", m.RegistrationEndpoint},
		{"revocation_endpoint", m.RevocationEndpoint},
		{"introspection_endpoint", m.IntrospectionEndpoint},
	} {
		if ep.value == "" {
			continue
		}
		if err := p.CheckURL(ep.value); err != nil {
			return fmt.Errorf("%s: %w", ep.name, err)
		}
	}
	return nil
}

// SupportsS256 reports whether the metadata advertises the S256 PKCE method.
// An absent list means no: MCP clients MUST NOT proceed without it, and a
// list offering only "plain" is refused too.
func (m *AuthServerMetadata) SupportsS256() bool {
	return slices.Contains(m.CodeChallengeMethodsSupported, PKCEMethodS256)
}

// SupportsResponseType reports whether rt is listed in
// response_types_supported.
func (m *AuthServerMetadata) SupportsResponseType(rt string) bool {
	return slices.Contains(m.ResponseTypesSupported, rt)
}

// SupportsGrantType reports whether grant type gt is supported, applying the
// RFC 8414 §2 default ["authorization_code", "implicit"] when the list is
// absent.
func (m *AuthServerMetadata) SupportsGrantType(gt string) bool {
	if len(m.GrantTypesSupported) == 0 {
		return gt == "authorization_code" || gt == "implicit"
	}
	return slices.Contains(m.GrantTypesSupported, gt)
}

// SupportsTokenEndpointAuthMethod reports whether method is supported at the
// token endpoint, applying the RFC 8414 §2 default ["client_secret_basic"]
// when the list is absent.
func (m *AuthServerMetadata) SupportsTokenEndpointAuthMethod(method string) bool {
	if len(m.TokenEndpointAuthMethodsSupported) == 0 {
		return method == "client_secret_basic"
	}
	return slices.Contains(m.TokenEndpointAuthMethodsSupported, method)
}

// SupportsScope reports whether scope is listed in scopes_supported.
func (m *AuthServerMetadata) SupportsScope(scope string) bool {
	return slices.Contains(m.ScopesSupported, scope)
}
