package tokenstore

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Store persists tokens, registrations and discovery state. Implementations
// must be safe for concurrent use, must return copies (a caller may modify
// what it gets without affecting the store), and must return an error
// wrapping [ErrNotFound] for a missing entry.
type Store interface {
	// Token returns the token stored under k.
	Token(ctx context.Context, k Key) (*Token, error)
	// PutToken stores t under k, replacing any previous token.
	PutToken(ctx context.Context, k Key, t *Token) error
	// DeleteToken removes the token under k; a missing entry is not an
	// error.
	DeleteToken(ctx context.Context, k Key) error

	// Registration returns the client registration for issuer.
	Registration(ctx context.Context, issuer string) (*Registration, error)
	// PutRegistration stores r under r.Issuer, replacing any previous one.
	PutRegistration(ctx context.Context, r *Registration) error
	// DeleteRegistration removes the registration for issuer; a missing
	// entry is not an error.
	DeleteRegistration(ctx context.Context, issuer string) error

	// Discovery returns the discovery state for the canonical MCP server
	// URL resource.
	Discovery(ctx context.Context, resource string) (*Discovery, error)
	// PutDiscovery stores d under d.Resource.
	PutDiscovery(ctx context.Context, d *Discovery) error
}

// Locker is implemented by stores that several processes share. The client
// holds the lock for a token's key while it refreshes that token, so that
// two processes never redeem the same rotating refresh token (OAuth 2.1
// §4.3.1: reuse may revoke the whole grant). Unlock must be called exactly
// once.
type Locker interface {
	Lock(ctx context.Context, k Key) (unlock func(), err error)
}

// Key identifies a token: the issuer that minted it, the resource indicator
// (RFC 8707) it was requested for, and the client_id it was issued to.
type Key struct {
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
	ClientID string `json:"client_id"`
}

// Token is an access token with what the client needs to use and renew it:
// golang.org/x/oauth2's [oauth2.Token] (TokenType "Bearer", or "DPoP" for a
// token bound to the client's DPoP key, RFC 9449 §5; a zero Expiry means
// the server did not say, and the token is used until it is refused) and
// the client's bookkeeping. The JSON names are those files have always
// held. Format it freely: String, GoString and LogValue never show the
// tokens.
type Token struct {
	oauth2.Token
	// DPoPJKT is, for a DPoP-bound token, the RFC 7638 thumbprint of the
	// key it is bound to; a client with another key does not use it.
	DPoPJKT string `json:"dpop_jkt,omitempty"`
	// DPoPKey is, for a token bound to a key the client generated, that
	// private key as a JSON Web Key (RFC 7517, with "alg"), so that a later
	// run sharing the store presents and refreshes the token with it. It
	// is a credential like the refresh token; empty for a key the
	// application supplies (client.DPoPConfig.Key) and for Bearer tokens.
	DPoPKey json.RawMessage `json:"dpop_key,omitempty"`
	// Scopes are the scopes granted: the response's scope, or the request's
	// when the response omitted it (RFC 6749 §5.1).
	Scopes []string `json:"scopes,omitempty"`
	// RequestedScopes are the scopes the client asked for; step-up
	// authorization requests their union with the challenged scopes.
	RequestedScopes []string `json:"requested_scopes,omitempty"`
	// RefreshedAfterRejection is set on a token obtained by refreshing
	// after the resource refused the previous one (401). If the resource
	// refuses this one too, the client starts a new authorization instead
	// of refreshing again.
	RefreshedAfterRejection bool `json:"refreshed_after_rejection,omitempty"`
}

// Valid reports whether t can be sent at now: it has an access token and
// is not within leeway of its expiry. A token without an expiry is valid.
// It replaces x/oauth2's Valid, which reads the system clock.
func (t *Token) Valid(now time.Time, leeway time.Duration) bool {
	if t == nil || t.AccessToken == "" {
		return false
	}
	return t.Expiry.IsZero() || now.Add(leeway).Before(t.Expiry)
}

// Clone returns a deep copy of t.
func (t *Token) Clone() *Token {
	if t == nil {
		return nil
	}
	c := *t
	c.DPoPKey = slices.Clone(t.DPoPKey)
	c.Scopes = slices.Clone(t.Scopes)
	c.RequestedScopes = slices.Clone(t.RequestedScopes)
	return &c
}

// String describes t without its secrets. The formatting methods have
// value receivers so that a Token value (or a struct holding one) is
// redacted as well as a *Token; fmt prints a nil *Token as <nil>.
func (t Token) String() string {
	return "tokenstore.Token{type:" + t.TokenType + ", access_token:<redacted>, expiry:" + t.Expiry.Format(time.RFC3339) + "}"
}

// GoString is String, so %#v does not print the tokens either.
func (t Token) GoString() string { return t.String() }

// LogValue implements slog.LogValuer without the tokens.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("token_type", t.TokenType),
		slog.Time("expiry", t.Expiry),
		slog.Bool("has_refresh_token", t.RefreshToken != ""),
	)
}

// How a client obtained its client_id (MCP "Client Registration", in order
// of preference).
const (
	MethodPreRegistered = "pre-registered"
	MethodCIMD          = "client-id-metadata-document"
	MethodDynamic       = "dynamic"
)

// Registration is this client's identity at one authorization server.
// Format it freely: String, GoString and LogValue never show the secret.
type Registration struct {
	// Issuer is the authorization server the registration is bound to.
	Issuer string `json:"issuer"`
	// Method is how the client_id was obtained (MethodDynamic, ...).
	Method string `json:"method"`
	// ClientID is the client identifier at Issuer.
	ClientID string `json:"client_id"`
	// ClientSecret is the client secret; empty for public clients.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientSecretExpiresAt is when the secret expires; zero for never.
	ClientSecretExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
	// TokenEndpointAuthMethod is the registered token endpoint
	// authentication method; empty when the server did not say.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// RedirectURIs are the registered redirect URIs.
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	// RegisteredAt is when the registration was made.
	RegisteredAt time.Time `json:"registered_at,omitzero"`
	// GrantTypes are the registered grant types; empty when unknown (a
	// registration stored by an older version).
	GrantTypes []string `json:"grant_types,omitempty"`
}

// Clone returns a deep copy of r.
func (r *Registration) Clone() *Registration {
	if r == nil {
		return nil
	}
	c := *r
	c.RedirectURIs = slices.Clone(r.RedirectURIs)
	c.GrantTypes = slices.Clone(r.GrantTypes)
	return &c
}

// String describes r without its secret. Like [Token]'s, the formatting
// methods have value receivers, so a Registration value is redacted too.
func (r Registration) String() string {
	return "tokenstore.Registration{issuer:" + r.Issuer + ", method:" + r.Method + ", client_id:" + r.ClientID + "}"
}

// GoString is String, so %#v does not print the secret either.
func (r Registration) GoString() string { return r.String() }

// LogValue implements slog.LogValuer without the secret.
func (r Registration) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("issuer", r.Issuer),
		slog.String("method", r.Method),
		slog.String("client_id", r.ClientID),
	)
}

// Discovery is the outcome of authorization discovery for one MCP server.
type Discovery struct {
	// Resource is the canonical URL of the MCP server, the lookup key.
	Resource string `json:"resource"`
	// ResourceIndicator is the RFC 8707 "resource" value to send: the
	// validated "resource" of the protected resource metadata, or Resource
	// itself for a 2025-03-26 server without metadata.
	ResourceIndicator string `json:"resource_indicator"`
	// ResourceMetadataURL is where the protected resource metadata was
	// found; empty for a 2025-03-26 server.
	ResourceMetadataURL string `json:"resource_metadata_url,omitempty"`
	// ScopesSupported is the metadata's scopes_supported.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// Issuer is the chosen authorization server.
	Issuer string `json:"issuer"`
	// AuthServer is its validated metadata.
	AuthServer *oauthmeta.AuthServerMetadata `json:"authorization_server"`
	// DPoPSigningAlgValuesSupported is the metadata's
	// dpop_signing_alg_values_supported: the DPoP proof algorithms the
	// resource accepts (RFC 9449 §7.1, RFC 9728 §2).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired is the metadata's
	// dpop_bound_access_tokens_required: the resource accepts only
	// DPoP-bound tokens.
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
	// Legacy marks a 2025-03-26 server: no protected resource metadata.
	Legacy bool `json:"legacy,omitempty"`
	// DefaultEndpoints marks authorization server metadata that was not
	// published but assumed (2025-03-26: /authorize, /token, /register).
	DefaultEndpoints bool `json:"default_endpoints,omitempty"`
	// FetchedAt is when discovery ran.
	FetchedAt time.Time `json:"fetched_at"`
	// Expires is when the documents should be fetched again.
	Expires time.Time `json:"expires"`
}

// Clone returns a deep copy of d.
func (d *Discovery) Clone() *Discovery {
	if d == nil {
		return nil
	}
	c := *d
	c.ScopesSupported = slices.Clone(d.ScopesSupported)
	c.DPoPSigningAlgValuesSupported = slices.Clone(d.DPoPSigningAlgValuesSupported)
	if d.AuthServer != nil {
		m := cloneMetadata(*d.AuthServer)
		c.AuthServer = &m
	}
	return &c
}

func cloneMetadata(m oauthmeta.AuthServerMetadata) oauthmeta.AuthServerMetadata {
	m.ScopesSupported = slices.Clone(m.ScopesSupported)
	m.ResponseTypesSupported = slices.Clone(m.ResponseTypesSupported)
	m.ResponseModesSupported = slices.Clone(m.ResponseModesSupported)
	m.GrantTypesSupported = slices.Clone(m.GrantTypesSupported)
	m.TokenEndpointAuthMethodsSupported = slices.Clone(m.TokenEndpointAuthMethodsSupported)
	m.TokenEndpointAuthSigningAlgValuesSupported = slices.Clone(m.TokenEndpointAuthSigningAlgValuesSupported)
	m.RevocationEndpointAuthMethodsSupported = slices.Clone(m.RevocationEndpointAuthMethodsSupported)
	m.IntrospectionEndpointAuthMethodsSupported = slices.Clone(m.IntrospectionEndpointAuthMethodsSupported)
	m.CodeChallengeMethodsSupported = slices.Clone(m.CodeChallengeMethodsSupported)
	m.DPoPSigningAlgValuesSupported = slices.Clone(m.DPoPSigningAlgValuesSupported)
	return m
}
