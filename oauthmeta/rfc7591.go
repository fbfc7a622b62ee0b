package oauthmeta

import ()

// Token endpoint authentication methods (RFC 7591 §2, RFC 7523, OAuth 2.1
// §2.4).
const (
	AuthMethodNone              = "none"
	AuthMethodClientSecretBasic = "client_secret_basic"
	AuthMethodClientSecretPost  = "client_secret_post"
	AuthMethodClientSecretJWT   = "client_secret_jwt"
	AuthMethodPrivateKeyJWT     = "private_key_jwt"
)

// Grant types (RFC 6749, RFC 7523, RFC 8693).
const (
	GrantTypeAuthorizationCode = "authorization_code"
	GrantTypeRefreshToken      = "refresh_token"
	GrantTypeClientCredentials = "client_credentials"
	GrantTypeJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTypeTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// ClientMetadata is the RFC 7591 §2 client metadata, sent in a Dynamic Client
// Registration request and, together with client_id, forming a Client ID
// Metadata Document (see package clientmeta).
type ClientMetadata struct {
	// RedirectURIs is "redirect_uris" (§2). REQUIRED for redirect-based
	// flows; matched exactly by the authorization server.
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	// TokenEndpointAuthMethod is "token_endpoint_auth_method" (§2). OPTIONAL;
	// absent means "client_secret_basic" in DCR.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// GrantTypes is "grant_types" (§2). OPTIONAL; absent means
	// ["authorization_code"].
	GrantTypes []string `json:"grant_types,omitempty"`
	// ResponseTypes is "response_types" (§2). OPTIONAL; absent means ["code"].
	ResponseTypes []string `json:"response_types,omitempty"`
	// ClientName is "client_name" (§2). RECOMMENDED; MCP requires it in a
	// Client ID Metadata Document.
	ClientName string `json:"client_name,omitempty"`
	// ClientURI is "client_uri" (§2). RECOMMENDED.
	ClientURI string `json:"client_uri,omitempty"`
	// LogoURI is "logo_uri" (§2). OPTIONAL.
	LogoURI string `json:"logo_uri,omitempty"`
	// Scope is "scope" (§2), space-separated. OPTIONAL.
	Scope string `json:"scope,omitempty"`
	// Contacts is "contacts" (§2). OPTIONAL.
	Contacts []string `json:"contacts,omitempty"`
	// TOSURI is "tos_uri" (§2). OPTIONAL.
	TOSURI string `json:"tos_uri,omitempty"`
	// PolicyURI is "policy_uri" (§2). OPTIONAL.
	PolicyURI string `json:"policy_uri,omitempty"`
	// JWKSURI is "jwks_uri" (§2). OPTIONAL; mutually exclusive with JWKS.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// JWKS is "jwks" (§2), an inline JWK Set kept as raw JSON. OPTIONAL.
	JWKS RawJSON `json:"jwks,omitempty"`
	// SoftwareID is "software_id" (§2). OPTIONAL.
	SoftwareID string `json:"software_id,omitempty"`
	// SoftwareVersion is "software_version" (§2). OPTIONAL.
	SoftwareVersion string `json:"software_version,omitempty"`
	// ApplicationType is "application_type" (OpenID Connect Registration
	// §2): "native" or "web". MCP 2026-07-28 requires DCR clients to send it
	// (SEP-837).
	ApplicationType string `json:"application_type,omitempty"`
	// DPoPBoundAccessTokens is "dpop_bound_access_tokens" (RFC 9449 §5.2).
	// OPTIONAL.
	DPoPBoundAccessTokens bool `json:"dpop_bound_access_tokens,omitempty"`
}

// ClientInformation is the RFC 7591 §3.2.1 registration response: the
// registered metadata plus the issued credentials.
type ClientInformation struct {
	// ClientID is "client_id". REQUIRED.
	ClientID string `json:"client_id"`
	// ClientSecret is "client_secret". OPTIONAL; absent for public clients.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientIDIssuedAt is "client_id_issued_at", seconds since the epoch.
	// OPTIONAL.
	ClientIDIssuedAt int64 `json:"client_id_issued_at,omitempty"`
	// ClientSecretExpiresAt is "client_secret_expires_at", seconds since the
	// epoch, 0 for never. REQUIRED if a secret was issued.
	ClientSecretExpiresAt int64 `json:"client_secret_expires_at,omitempty"`
	ClientMetadata
}

// ParseClientInformation decodes a registration response strictly and checks
// that client_id is present.
func ParseClientInformation(data []byte) (*ClientInformation, error) {
	var ci ClientInformation
	if err := DecodeJSON(data, &ci); err != nil {
		return nil, err
	}
	if ci.ClientID == "" {
		return nil, errField(ErrMissingField, "client_id", "")
	}
	return &ci, nil
}

// RawJSON is a raw encoded JSON value, kept verbatim (like
// encoding/json.RawMessage, decoded strictly).
type RawJSON []byte

// MarshalJSON returns the raw value, or null when empty.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON stores a copy of data.
func (r *RawJSON) UnmarshalJSON(data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}
