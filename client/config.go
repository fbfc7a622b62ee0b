package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// MaxAuthorizationAttempts is how many authorizations (interactive logins,
// including step-up) one operation may start before the client gives up
// (the conformance suite allows at most 3).
const MaxAuthorizationAttempts = 3

// Defaults for zero Config fields.
const (
	DefaultMetadataTTL = time.Hour
	MaxMetadataTTL     = 24 * time.Hour
	DefaultTimeout     = 10 * time.Second
	// DefaultStepUpWindow is how long the SDK adapter remembers an
	// operation's authorization attempts.
	DefaultStepUpWindow = 10 * time.Minute
	defaultClientName   = "mcpauth client"
	expiryLeeway        = 30 * time.Second
)

// Config configures a [Client]; [New] validates it. Zero values are the
// strict production behaviour: https only, public addresses only, exact
// resource matching, no 2025-03-26 fallbacks.
type Config struct {
	// Authorizer obtains authorization responses: it shows the
	// authorization URL to the user (or drives it) and brings back the
	// redirect. Required unless Grant or Device is set. See [Loopback], [Paste] and
	// [FollowRedirects].
	Authorizer Authorizer
	// Device, when set, offers the device authorization grant (RFC 8628):
	// alone (Authorizer nil) it authorizes every login, beside an
	// Authorizer it takes over when that finds no browser ([ErrNoBrowser]);
	// see [DeviceFlow]. Nil means the device flow is never used.
	Device *DeviceFlow
	// Grant, when set, obtains tokens without a user instead of the
	// authorization code flow: [ClientCredentials], [EnterpriseAuthorization]
	// or [WorkloadIdentity]. Nil means interactive authorization through
	// Authorizer.
	Grant Grant

	// Store keeps tokens, registrations and discovery state. Nil means a
	// new in-memory store ([tokenstore.NewMemory]); use
	// [tokenstore.NewFile] to keep logins across runs, or implement
	// [tokenstore.Store] over another storage.
	Store tokenstore.Store

	// ClientIDMetadataURL is the https URL at which this client's Client ID
	// Metadata Document is hosted; it becomes the client_id at every
	// authorization server that advertises
	// client_id_metadata_document_supported. New checks it against the
	// client_id URL rules. Empty means the client never uses a metadata
	// document.
	ClientIDMetadataURL string
	// ClientIDMetadata is the document served at ClientIDMetadataURL, when
	// the application has it at hand; New validates it against the
	// document rules. Nil means not checked here.
	ClientIDMetadata *clientmeta.Document

	// PreRegistered lists credentials registered out of band, each bound to
	// one issuer and never offered to another.
	PreRegistered []PreRegisteredClient

	// DisableDynamicRegistration turns off RFC 7591 registration (which MCP
	// 2026-07-28 deprecates). False means the client registers
	// dynamically when nothing better is available.
	DisableDynamicRegistration bool
	// ClientName is client_name in dynamic registration. Empty means
	// "mcpauth client".
	ClientName string
	// ApplicationType is application_type in dynamic registration: "native"
	// or "web". Empty means "native" for a loopback redirect URI and "web"
	// otherwise.
	ApplicationType string

	// SelectAuthServer orders (and may filter) the authorization servers a
	// resource's metadata lists. Nil keeps the published order. The client
	// uses the first one that is reachable and valid.
	SelectAuthServer AuthServerSelector
	// AuthServers holds per-issuer settings, keyed by exact issuer.
	AuthServers map[string]AuthServerOptions

	// DisableOfflineAccess stops the client from asking for offline_access.
	// False means it adds offline_access when the authorization server
	// lists it in scopes_supported and the request names other scopes
	// (SEP-2207).
	DisableOfflineAccess bool

	// MetadataTTL is how long discovery results are reused when the
	// documents carry no Cache-Control max-age. Zero means
	// [DefaultMetadataTTL]. Any lifetime is capped at [MaxMetadataTTL];
	// no-store means "fetch again next time".
	MetadataTTL time.Duration
	// StepUpWindow is how long the SDK adapter counts an operation's
	// authorization attempts (see [Client.OAuthHandler]). Zero means
	// [DefaultStepUpWindow].
	StepUpWindow time.Duration

	// TLSConfig is the TLS configuration for every request the client
	// makes. Nil means the system roots.
	TLSConfig *tls.Config
	// Timeout bounds each fetch, registration and token request. Zero
	// means [DefaultTimeout].
	Timeout time.Duration
	// UserAgent is sent on the client's own requests. Empty means
	// "mcpauth".
	UserAgent string

	// InsecureAllowHTTPLoopback permits plain http and loopback addresses
	// (127.0.0.0/8, ::1, "localhost") for the MCP server, metadata and
	// authorization server endpoints. For tests and development on one
	// machine only; false means https to public addresses only.
	InsecureAllowHTTPLoopback bool
	// InsecureAllowResourcePrefix accepts protected resource metadata whose
	// "resource" is not the URL called but a same-origin path prefix of it.
	// False means the exact RFC 9728 §3.3 comparison. Some servers publish
	// one root document ("resource": "https://h") for an MCP endpoint at
	// "https://h/mcp" and point to it from their challenges, and several
	// SDKs accept any same-origin prefix; that lets one path of a host
	// speak for another. With this set, the token is requested for the
	// prefix the metadata names. A root document reached by probing (not
	// through the challenge) is accepted without it, as RFC 9728 allows.
	InsecureAllowResourcePrefix bool
	// InsecureLegacy20250326 enables the MCP 2025-03-26 discovery
	// fallbacks: a server without protected resource metadata is its own
	// authorization server, and an authorization server without metadata
	// is assumed to serve /authorize, /token and /register at its origin.
	// The second fallback cannot check PKCE support,
	// hence the name. False means 2026-07-28 discovery only.
	InsecureLegacy20250326 bool

	// DPoP, when set, makes the client request DPoP-bound access tokens
	// (RFC 9449) and present them with fresh proofs; see [DPoPConfig].
	// Nil means Bearer tokens only, and a token_type DPoP is refused.
	DPoP *DPoPConfig

	// OnURLElicitation asks the user about a URL-mode elicitation of an
	// MCP server: show the full URL with its host highlighted and the
	// warnings, get consent, open it (only then, and only in the system
	// browser, [OpenBrowser]), and return once the user has finished
	// there (true) or declined (false). It is reached through
	// [Client.ElicitationHandler] and [Client.ElicitationMiddleware].
	// Nil declines every URL elicitation.
	OnURLElicitation func(ctx context.Context, e URLElicitation) (accepted bool, err error)

	// Logger receives debug and warning records about discovery,
	// registration and token handling; never a token or secret. Nil means
	// no logging.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time

	// net is the tests' resolver and dial function (internal/nethook), reached
	// through nethook.Set and nethook.Of.
	netHook
}

// PreRegisteredClient is a client registration made out of band, bound to
// one authorization server.
type PreRegisteredClient struct {
	// Issuer is the exact issuer identifier the credentials belong to.
	// Required.
	Issuer string
	// ClientID is the client identifier. Required.
	ClientID string
	// ClientSecret is the client secret; empty for a public client.
	ClientSecret string
	// TokenEndpointAuthMethod is the registered method: "none",
	// "client_secret_basic" or "client_secret_post". Empty means chosen
	// from the authorization server's metadata.
	TokenEndpointAuthMethod string
}

// AuthServerOptions are per-authorization-server compatibility settings.
type AuthServerOptions struct {
	// OmitResourceOnRefresh leaves the RFC 8707 resource parameter out of
	// refresh requests, for servers (such as Microsoft Entra ID) that
	// reject it there. False means resource is sent on every token request.
	OmitResourceOnRefresh bool
	// AuthorizationParams are extra parameters added to every
	// authorization request sent to this server, such as the "audience"
	// that Ory Hydra and Auth0 put in the access token's "aud" instead of
	// the RFC 8707 resource. They never replace a parameter the client sets
	// itself: New refuses the OAuth and PKCE parameters (client_id,
	// redirect_uri, response_type, scope, state, code_challenge,
	// code_challenge_method, resource, request, request_uri). Nil means
	// none.
	AuthorizationParams url.Values
	// AssumeS256 accepts this server although its metadata has no
	// code_challenge_methods_supported (Microsoft Entra ID and Amazon
	// Cognito accept S256 without saying so): the client still sends PKCE
	// S256. A document that lists methods without S256, or lists none, stays
	// refused. False means such a server is refused.
	AssumeS256 bool
	// OmitResource leaves the RFC 8707 resource parameter out of the
	// authorization, code exchange, refresh and grant requests to this
	// server, for servers that refuse it (the v2.0 endpoint of Microsoft
	// Entra ID). The audience then comes from the server's own
	// configuration (ResourceScopes, the "audience" of
	// AuthorizationParams), and the resource server must check "aud" by
	// its provider's profile. The client still uses only the servers the
	// resource's metadata lists and sends the token only to the resource's
	// origin. False means resource is sent on every request (and
	// OmitResourceOnRefresh decides for refresh).
	OmitResource bool
	// ResourceScopes are scopes naming the resource in this server's
	// terms, sent with every authorization and grant request to it, such
	// as Entra's "api://{app-id}/mcp.tools". A scope ending in "/.default"
	// (Entra: every permission granted to the client for that resource)
	// cannot be combined with other scopes of a resource, so it replaces
	// the MCP scopes; the OpenID Connect scopes (openid, profile, email,
	// offline_access) are kept. The stored token remembers the MCP scopes
	// asked for, so a step-up challenge re-authorizes as usual. New
	// refuses an invalid scope token, and a "/.default" scope with any
	// other. Nil means the MCP scopes as chosen.
	ResourceScopes []string
}

// reservedAuthorizationParams are the authorization request parameters
// the client sets itself; [AuthServerOptions].AuthorizationParams may not
// name them.
var reservedAuthorizationParams = []string{"client_id", "redirect_uri", "response_type", "response_mode", "scope", "state",
	"code_challenge", "code_challenge_method", "resource", "request", "request_uri", "nonce", "dpop_jkt"}

// AuthServerSelector orders the issuers a protected resource lists in
// authorization_servers; the client tries them in the returned order and
// uses the first that is reachable and valid. Returning a subset filters
// (an allowlist); returning an error aborts discovery.
type AuthServerSelector func(ctx context.Context, resource string, issuers []string) ([]string, error)

// validate checks the configuration and fills defaults.
func (cfg *Config) validate() error {
	if cfg.Authorizer == nil && cfg.Grant == nil && cfg.Device == nil {
		return fmt.Errorf("%w: Authorizer, Device or Grant is required", ErrConfig)
	}
	if cfg.Device != nil && cfg.Device.Show == nil {
		return fmt.Errorf("%w: Device.Show is required", ErrConfig)
	}
	if cfg.ClientIDMetadataURL != "" {
		if err := clientmeta.ValidateClientID(cfg.ClientIDMetadataURL); err != nil {
			return fmt.Errorf("%w: ClientIDMetadataURL (CIMD-12): %w", ErrConfig, err)
		}
	}
	if cfg.ClientIDMetadata != nil {
		if cfg.ClientIDMetadataURL == "" {
			return fmt.Errorf("%w: ClientIDMetadata without ClientIDMetadataURL", ErrConfig)
		}
		if err := cfg.ClientIDMetadata.Validate(cfg.ClientIDMetadataURL); err != nil {
			return fmt.Errorf("%w: ClientIDMetadata (CIMD-12): %w", ErrConfig, err)
		}
		if cfg.ClientIDMetadata.AuthMethod() != oauthmeta.AuthMethodNone {
			return fmt.Errorf("%w: ClientIDMetadata: only token_endpoint_auth_method none is supported", ErrConfig)
		}
	}
	if err := cfg.validatePreRegistered(); err != nil {
		return err
	}
	if err := cfg.validateAuthServers(); err != nil {
		return err
	}
	switch cfg.ApplicationType {
	case "", "native", "web":
	default:
		return fmt.Errorf("%w: ApplicationType must be native or web", ErrConfig)
	}
	if cfg.MetadataTTL < 0 || cfg.Timeout < 0 || cfg.StepUpWindow < 0 {
		return fmt.Errorf("%w: negative duration", ErrConfig)
	}
	cfg.MetadataTTL = min(cmp.Or(cfg.MetadataTTL, DefaultMetadataTTL), MaxMetadataTTL)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.StepUpWindow = cmp.Or(cfg.StepUpWindow, DefaultStepUpWindow)
	cfg.ClientName = cmp.Or(cfg.ClientName, defaultClientName)
	return nil
}

func (cfg *Config) validatePreRegistered() error {
	seen := map[string]bool{}
	for _, p := range cfg.PreRegistered {
		if p.ClientID == "" {
			return fmt.Errorf("%w: PreRegistered: empty ClientID", ErrConfig)
		}
		if err := (oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}).CheckIssuer(p.Issuer); err != nil {
			return fmt.Errorf("%w: PreRegistered: issuer: %w", ErrConfig, err)
		}
		if seen[p.Issuer] {
			return fmt.Errorf("%w: PreRegistered: two clients for one issuer", ErrConfig)
		}
		seen[p.Issuer] = true
		switch p.TokenEndpointAuthMethod {
		case "", oauthmeta.AuthMethodNone, oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
		default:
			return fmt.Errorf("%w: PreRegistered: unsupported token endpoint auth method", ErrConfig)
		}
	}
	return nil
}

// validateAuthServers checks the per-issuer settings: issuer identifiers,
// extra authorization parameters that set nothing the client owns, and
// resource scopes.
func (cfg *Config) validateAuthServers() error {
	for issuer, o := range cfg.AuthServers {
		if err := (oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}).CheckIssuer(issuer); err != nil {
			return fmt.Errorf("%w: AuthServers: issuer: %w", ErrConfig, err)
		}
		for name, values := range o.AuthorizationParams {
			if name == "" || slices.Contains(reservedAuthorizationParams, name) {
				return fmt.Errorf("%w: AuthServers[%s].AuthorizationParams: %q is set by the client itself", ErrConfig, issuer, name)
			}
			if len(values) != 1 {
				return fmt.Errorf("%w: AuthServers[%s].AuthorizationParams: %q needs exactly one value", ErrConfig, issuer, name)
			}
		}
		if err := checkResourceScopes(o.ResourceScopes); err != nil {
			return fmt.Errorf("%w: AuthServers[%s].ResourceScopes: %w", ErrConfig, issuer, err)
		}
	}
	return nil
}

// netHook embeds nethook.Hook in Config under an unexported name.
type netHook = nethook.Hook
