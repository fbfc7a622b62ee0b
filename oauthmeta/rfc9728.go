package oauthmeta

import (
	"fmt"
	"net/url"
	"strings"
)

// WellKnownProtectedResource is the RFC 9728 §3 well-known path suffix.
const WellKnownProtectedResource = "/.well-known/oauth-protected-resource"

// ProtectedResourceMetadata is the RFC 9728 §2 OAuth 2.0 Protected Resource
// Metadata document. Field comments give the JSON member, the RFC section and
// whether it is required; empty fields are omitted when encoding (§2: omit
// parameters that have no value).
type ProtectedResourceMetadata struct {
	// Resource is "resource" (§2), the protected resource's identifier.
	// REQUIRED; must be identical to the URL the metadata was requested for
	// (§3.3).
	Resource string `json:"resource"`
	// AuthorizationServers is "authorization_servers" (§2), issuer identifiers
	// of the authorization servers that can be used with this resource.
	// OPTIONAL in RFC 9728; MCP requires at least one.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is "jwks_uri" (§2), the resource's own JWK Set. OPTIONAL.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported is "scopes_supported" (§2). RECOMMENDED.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported is "bearer_methods_supported" (§2): "header",
	// "body", "query". OPTIONAL; MCP resources support "header" only.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceSigningAlgValuesSupported is
	// "resource_signing_alg_values_supported" (§2). OPTIONAL.
	ResourceSigningAlgValuesSupported []string `json:"resource_signing_alg_values_supported,omitempty"`
	// ResourceName is "resource_name" (§2), human-readable. RECOMMENDED.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is "resource_documentation" (§2). OPTIONAL.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// ResourcePolicyURI is "resource_policy_uri" (§2). OPTIONAL.
	ResourcePolicyURI string `json:"resource_policy_uri,omitempty"`
	// ResourceTOSURI is "resource_tos_uri" (§2). OPTIONAL.
	ResourceTOSURI string `json:"resource_tos_uri,omitempty"`
	// TLSClientCertificateBoundAccessTokens is
	// "tls_client_certificate_bound_access_tokens" (§2, RFC 8705). OPTIONAL.
	TLSClientCertificateBoundAccessTokens bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
	// AuthorizationDetailsTypesSupported is
	// "authorization_details_types_supported" (§2, RFC 9396). OPTIONAL.
	AuthorizationDetailsTypesSupported []string `json:"authorization_details_types_supported,omitempty"`
	// DPoPSigningAlgValuesSupported is "dpop_signing_alg_values_supported"
	// (§2, RFC 9449). OPTIONAL.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired is "dpop_bound_access_tokens_required"
	// (§2, RFC 9449). OPTIONAL; false when absent.
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
	// SignedMetadata is "signed_metadata" (§2.2), a JWT. OPTIONAL; mcpauth
	// neither produces nor trusts it.
	SignedMetadata string `json:"signed_metadata,omitempty"`
}

// ParseProtectedResourceMetadata decodes an RFC 9728 document strictly (one
// JSON object, case-sensitive names, no duplicates) and checks that the
// required "resource" member is present. Use
// [ProtectedResourceMetadata.Validate] before trusting its contents.
func ParseProtectedResourceMetadata(data []byte) (*ProtectedResourceMetadata, error) {
	var m ProtectedResourceMetadata
	if err := DecodeJSON(data, &m); err != nil {
		return nil, err
	}
	if m.Resource == "" {
		return nil, errField(ErrMissingField, "resource", "")
	}
	return &m, nil
}

// Validate applies the rules a client must check before using the document
// (RFC 9728 §3.3, §7.3):
//   - "resource" is identical, by simple string comparison, to expected;
//   - at least one authorization server is listed (MCP), each a valid issuer
//     identifier under p;
//   - jwks_uri, when present, is acceptable under p.
func (m *ProtectedResourceMetadata) Validate(expected string, p URLPolicy) error {
	if m.Resource != expected {
		return errField(ErrResourceMismatch, "resource", "not identical to the URL requested")
	}
	if len(m.AuthorizationServers) == 0 {
		return errField(ErrMissingField, "authorization_servers", "MCP requires at least one")
	}
	for _, as := range m.AuthorizationServers {
		if err := p.CheckIssuer(as); err != nil {
			return fmt.Errorf("authorization_servers: %w", err)
		}
	}
	if m.JWKSURI != "" {
		if err := p.CheckURL(m.JWKSURI); err != nil {
			return fmt.Errorf("jwks_uri: %w", err)
		}
	}
	return nil
}

// ProtectedResourceMetadataURL returns the well-known URL of the metadata for
// resource, formed by inserting "/.well-known/oauth-protected-resource"
// between the host and the path, after removing a terminating "/" from the
// path (RFC 9728 §3.1). Any query is kept. Examples:
//
//	https://h/public/mcp -> https://h/.well-known/oauth-protected-resource/public/mcp
//	https://h            -> https://h/.well-known/oauth-protected-resource
func ProtectedResourceMetadataURL(resource string) (string, error) {
	u, err := parseIdentifierURL(resource, ErrInvalidResource)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	out := u.Scheme + "://" + u.Host + WellKnownProtectedResource + path
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, nil
}

// ProtectedResourceMetadataRootURL returns the well-known metadata URL at the
// origin of resource (the last fallback of MCP's discovery order),
// and the resource identifier that document must carry: the origin itself
// (RFC 9728 §3.3).
func ProtectedResourceMetadataRootURL(resource string) (metadataURL, origin string, err error) {
	u, err := parseIdentifierURL(resource, ErrInvalidResource)
	if err != nil {
		return "", "", err
	}
	origin = u.Scheme + "://" + u.Host
	return origin + WellKnownProtectedResource, origin, nil
}

// parseIdentifierURL parses an absolute URL without fragment, for building
// well-known URLs from it.
func parseIdentifierURL(raw string, sentinel error) (*url.URL, error) {
	if raw == "" || len(raw) > maxURLLength || strings.ContainsAny(raw, " \t\r\n\x00\\#") {
		return nil, errField(sentinel, "url", "not an absolute URL without fragment")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil {
		return nil, errField(sentinel, "url", "not an absolute URL without fragment")
	}
	return u, nil
}
