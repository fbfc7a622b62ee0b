package authserver

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/clientaddr"
	"github.com/mcpauth/mcpauth/replay"
)

// ConsentMode says how the authorization endpoint obtains the user's
// approval.
type ConsentMode int

// Consent modes. The zero value shows the consent page.
const (
	// ConsentPrompt shows an HTML consent page with Approve and Deny.
	ConsentPrompt ConsentMode = iota
	// ConsentAuto approves every valid request at once, without a page: a
	// plain redirect that a test or a script can follow.
	ConsentAuto
	// ConsentDeny refuses every valid request with access_denied.
	ConsentDeny
)

// String returns "consent", "auto" or "deny".
func (m ConsentMode) String() string {
	switch m {
	case ConsentAuto:
		return "auto"
	case ConsentDeny:
		return "deny"
	default:
		return "consent"
	}
}

// ParseConsentMode parses "consent", "auto" or "deny".
func ParseConsentMode(s string) (ConsentMode, error) {
	switch s {
	case "consent", "prompt":
		return ConsentPrompt, nil
	case "auto":
		return ConsentAuto, nil
	case "deny":
		return ConsentDeny, nil
	}
	return 0, configErr("consent mode", "must be auto, consent or deny")
}

// Defaults for zero-valued [Config] fields.
const (
	defaultSubject          = "demo-user"
	DefaultAccessTokenTTL   = 15 * time.Minute
	DefaultRefreshTokenTTL  = 30 * 24 * time.Hour
	defaultCodeTTL          = 5 * time.Minute
	maxCodeTTL              = 10 * time.Minute
	DefaultSigningAlgorithm = "ES256"
	defaultKeyPrePublish    = 10 * time.Minute
	// defaultKeyReloadInterval bounds how long a replica takes to see a
	// signing key that another replica added (see [Config.KeyReloadInterval]).
	defaultKeyReloadInterval = 30 * time.Second
	defaultMaxBodyBytes      = 64 << 10
	consentTTL               = 30 * 24 * time.Hour
)

// Config configures [New]. Only Issuer is required; every other zero value
// is documented and safe.
type Config struct {
	// Issuer is the issuer identifier (RFC 8414 §2): an https URL without
	// query or fragment, possibly with a path (https://as.example/tenant1).
	// Endpoints live under it and metadata at its path-inserted well-known
	// URLs. REQUIRED.
	Issuer string
	// InsecureAllowHTTPLoopback permits a plain http issuer on a loopback address
	// or "localhost", for tests and local development. False (the zero
	// value) means https only. It never permits http to any other host.
	InsecureAllowHTTPLoopback bool

	// Scopes is scopes_supported. A request for any other scope gets
	// invalid_scope. Empty means no scope can be requested.
	Scopes []string
	// DefaultScopes are granted when a request names no scope and the
	// client has no DefaultScopes of its own. Each must be in Scopes. Empty
	// means such requests get no scope.
	DefaultScopes []string
	// Resources, when not empty, lists the only resource indicators
	// (RFC 8707) that may be requested; others get invalid_target. Empty
	// means any absolute http(s) URI without fragment.
	Resources []string
	// DefaultResource is the token audience when a request names no
	// resource (RFC 9068 §3). Empty means the issuer itself, which no
	// resource server should accept.
	DefaultResource string

	// Clients are pre-registered clients. Their Secret is hashed at New.
	// A pre-registered client may have a scope ceiling
	// ([Client.AllowedScopes]); clients that register themselves (Dynamic
	// Client Registration, Client ID Metadata Documents) never do: the scope
	// they register is only their default ([Client.DefaultScopes]).
	Clients []Client
	// DisableRegistration turns Dynamic Client Registration (RFC 7591)
	// off. False means the registration endpoint is served.
	DisableRegistration bool
	// DisableClientIDMetadataDocuments turns Client ID Metadata Documents
	// off. False means URL client_ids are resolved with ClientMetadata.
	DisableClientIDMetadataDocuments bool
	// ClientMetadata resolves URL client_ids. Nil means a resolver with the
	// strict defaults of [clientmeta.ResolverConfig] and the server's clock.
	ClientMetadata *clientmeta.Resolver

	// Consent is how approval is obtained. The zero value shows the page.
	Consent ConsentMode
	// RememberConsent skips the page when the same user already approved
	// the same client, redirect URI, scopes and resources, in the same
	// browser (a SameSite=Strict cookie set by the approval), and the
	// browser reports the request as a top-level navigation from this
	// server's own origin or site (Sec-Fetch-Site same-origin or
	// same-site). A cross-site request, one the browser reports as "none"
	// (as it does for a URL an application opened, even after another site
	// redirected it) and one without these headers all see the page. False
	// (the zero value) asks every time.
	RememberConsent bool
	// Subject is the user every grant is issued for when there is no
	// Login. Empty means "demo-user".
	Subject string
	// Login, when set, makes users log in at an identity provider (package
	// authserver/upstream has OpenID Connect and GitHub): grants are then
	// issued for the user the provider authenticated, after our consent
	// page. Register [Server.UpstreamCallbackURL] at the provider. Nil means
	// no login: every grant is for Subject.
	Login Login
	// Allow says who may log in at Login. With Login set, an empty
	// allow-list is a configuration error unless Allow.AllowAnyUser is set.
	Allow AllowList
	// GrantPolicy, with Login, says which of the requested MCP scopes each
	// admitted user may obtain (see [GrantPolicy]). Nil means every scope
	// the client may request, as without Login.
	GrantPolicy *GrantPolicy
	// Logins, instead of Login, are several identity providers: the user
	// chooses one on a page of ours, or the domain of their email picks it
	// (HomeRealms). Each provider has its own redirect URI
	// ([Server.UpstreamCallbackURLFor]), its own allow-list and grant
	// policy, and its users' subjects are made from its issuer, so a user
	// of one provider is never a user of another. Allow and GrantPolicy
	// must then be empty. Nil means Login alone.
	Logins []LoginProvider
	// HomeRealms, with Logins, maps an email domain (exactly, compared
	// without regard to ASCII case, as [AllowList.EmailDomains]) to the
	// Name of the provider its users log in at: a client's login_hint or
	// the address typed on the choice page skips the choice, and a user
	// whose verified email is at a mapped domain is refused at any other
	// provider. Nil means the user always chooses.
	HomeRealms map[string]string
	// Vault, with Login, keeps the provider's tokens of each login, sealed,
	// for the RFC 8693 token exchange by which resource servers act at the
	// provider's APIs as the user. New calls it once with the store of
	// upstream tokens the server uses ([Storage.UpstreamTokens]). Nil
	// means the provider's tokens are discarded after the login.
	Vault func(UpstreamTokenStore) (Vault, error)
	// VaultAudience is the name resource servers send as the token
	// exchange's "audience" to ask for the provider's access token, e.g.
	// "github". The provider's issuer identifier is always accepted, as
	// "audience" or "resource". Empty means only the issuer identifier.
	VaultAudience string
	// VaultResourceServers maps the client_id of a pre-registered
	// confidential client, allowed the token exchange grant, to the
	// resource (the MCP server URI) whose identity it is: it may exchange
	// only access tokens whose "aud" holds that resource for the provider's
	// access token of their user. Other clients get unauthorized_client.
	// Empty means that exchange is not offered.
	VaultResourceServers map[string]string
	// Connect are the third-party services whose accounts users connect
	// here for MCP servers to act there as them (see [ConnectProvider]):
	// the token exchange by the resource servers of VaultResourceServers,
	// "audience" a provider's Name, answers with the user's token there,
	// or with a connect URI. It needs Login. Empty means none.
	Connect []ConnectProvider
	// DownstreamAPIs are the APIs for which resource servers may obtain
	// tokens of their own, acting for the user, by the RFC 8693 token
	// exchange of the access tokens they receive (see [DownstreamAPI]).
	// Empty means none: such an exchange gets invalid_target.
	DownstreamAPIs []DownstreamAPI

	// AccessTokenTTL is the access token lifetime. Zero means
	// [DefaultAccessTokenTTL].
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the absolute lifetime of a grant and so of its
	// refresh token family. Zero means [DefaultRefreshTokenTTL].
	RefreshTokenTTL time.Duration
	// CodeTTL is the authorization code lifetime, at most 10 minutes.
	// Zero means 5 minutes.
	CodeTTL time.Duration

	// SigningAlgorithm is "ES256", "RS256" or "EdDSA". Empty means
	// [DefaultSigningAlgorithm].
	SigningAlgorithm string
	// KeyRotationInterval makes the server schedule a new signing key when
	// the newest one is this old. Zero means keys rotate only through
	// [Server.RotateSigningKey]. Replicas sharing a key store that fall due
	// within one KeyReloadInterval may each add a key: every replica then
	// publishes all of them and the newest signs, so nothing breaks.
	KeyRotationInterval time.Duration
	// KeyPrePublish is how long a new key is published before it signs.
	// Zero means 10 minutes.
	KeyPrePublish time.Duration
	// KeyReloadInterval is how often the server reads the signing keys
	// back from the key store, so that replicas sharing one store publish
	// and use a key that another replica added or retired. It must be
	// shorter than KeyPrePublish, so every replica publishes a new key
	// before any signs with it. Zero means 30 seconds.
	KeyReloadInterval time.Duration

	// Storage holds the server's state; its nil fields are in memory, so
	// the zero value keeps everything in memory, lost at a restart.
	// Package boltstore keeps it in one file, package pgstore in a
	// PostgreSQL database shared by replicas.
	Storage Storage
	// Replay, when set, records the "jti" of DPoP proofs at the token
	// endpoint, of private_key_jwt client assertions and of JWT-bearer
	// grants (workload tokens and ID-JAGs) until they expire. Replicas of
	// one issuer must share one (package redisreplay keeps one on Redis),
	// or a proof or assertion accepted at one replica could be replayed at
	// another. A key the store reports with replay.ErrReplayed is refused
	// as replayed; any other error refuses the request with
	// temporarily_unavailable (fail closed). Nil means an in-memory store
	// in each verifier, which is correct for one replica only.
	Replay replay.Store

	// RateLimit bounds the token, registration, introspection and
	// revocation endpoints and, per IP, the browser endpoints
	// (authorization, consent, upstream callback). Zero fields take their
	// defaults.
	RateLimit RateLimit
	// TrustedProxies are the load balancers and reverse proxies whose
	// forwarding header names the client address that the rate limits
	// count by (see [TrustedProxies]). The zero value trusts none: the
	// address is the connection's peer.
	TrustedProxies TrustedProxies
	// MaxBodyBytes caps every request body. Zero means
	// 64 KiB.
	MaxBodyBytes int64

	// Device turns on the device authorization grant (RFC 8628) for hosts
	// without a browser; see [DeviceConfig]. Nil means it is not offered.
	Device *DeviceConfig

	// DPoP turns on sender-constrained tokens (RFC 9449); see [DPoPConfig].
	// Nil means DPoP is off.
	DPoP *DPoPConfig
	// TrustedIssuers are the issuers whose JWTs the token endpoint accepts
	// with the JWT-bearer grant (RFC 7523): workload identity platforms and
	// enterprise IdPs issuing ID-JAGs. Empty means the grant is not
	// offered.
	TrustedIssuers []TrustedIssuer
	// Delegation turns on delegation chains by token exchange (RFC 8693
	// with actor_token); see [DelegationConfig]. Nil means a token
	// exchange naming an actor is refused.
	Delegation *DelegationConfig
	// IdentityProvider, when set, makes the server also play the enterprise
	// IdP of Enterprise-Managed Authorization: its token endpoint exchanges
	// ID tokens for ID-JAGs (RFC 8693). Nil means it does not.
	IdentityProvider *IdentityProviderConfig
	// KeyFetch configures how JWK sets named by URL (a client's jwks_uri,
	// a trusted issuer's JWKSURI) are fetched. The zero value is strict:
	// https to public addresses only.
	KeyFetch KeyFetchConfig

	// Admin, when set, serves the admin API, with which an operator lists
	// and revokes a user's grants (see [AdminConfig]). Nil means no admin
	// API.
	Admin *AdminConfig
	// Observer, when set, receives one [Event] per request at the token,
	// introspection, revocation and registration endpoints and the
	// upstream login callback: grants by type and outcome, refusals by
	// error code, latencies, internal errors. Nil means none.
	Observer Observer
	// TracerProvider, when set, makes the server record an OpenTelemetry
	// span for each of those requests, a child of the W3C traceparent the
	// request carries, with its grant type and outcome as attributes and
	// never a token, code or secret. Nil means no tracing, at no cost.
	TracerProvider trace.TracerProvider

	// Logger receives operational logs; nothing logged ever contains a
	// token, code or secret. Nil discards logs.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// settings is the validated configuration with defaults applied.
type settings struct {
	Config
	issuerPath   string // path of the issuer without trailing "/"
	issuerOrigin string // scheme://host[:port]
	https        bool
	clientAddrs  *clientaddr.Resolver // of TrustedProxies, made by validate
}

func (c *Config) withDefaults() settings {
	s := settings{Config: *c}
	s.Subject = cmp.Or(s.Subject, defaultSubject)
	s.AccessTokenTTL = cmp.Or(s.AccessTokenTTL, DefaultAccessTokenTTL)
	s.RefreshTokenTTL = cmp.Or(s.RefreshTokenTTL, DefaultRefreshTokenTTL)
	s.CodeTTL = cmp.Or(s.CodeTTL, defaultCodeTTL)
	s.SigningAlgorithm = cmp.Or(s.SigningAlgorithm, DefaultSigningAlgorithm)
	s.KeyPrePublish = cmp.Or(s.KeyPrePublish, defaultKeyPrePublish)
	s.KeyReloadInterval = cmp.Or(s.KeyReloadInterval, min(defaultKeyReloadInterval, s.KeyPrePublish/2))
	s.MaxBodyBytes = cmp.Or(s.MaxBodyBytes, defaultMaxBodyBytes)
	s.RateLimit = s.RateLimit.withDefaults()
	return s
}

func (s *settings) validateDurations() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"AccessTokenTTL", s.AccessTokenTTL}, {"RefreshTokenTTL", s.RefreshTokenTTL},
		{"CodeTTL", s.CodeTTL}, {"KeyPrePublish", s.KeyPrePublish},
		{"KeyRotationInterval", s.KeyRotationInterval + 1}, {"KeyReloadInterval", s.KeyReloadInterval},
	} {
		if d.v <= 0 {
			return configErr(d.name, "must be positive")
		}
	}
	if s.KeyReloadInterval >= s.KeyPrePublish {
		return configErr("KeyReloadInterval", "must be shorter than KeyPrePublish")
	}
	if s.CodeTTL > maxCodeTTL {
		return configErr("CodeTTL", fmt.Sprintf("must be at most %s", maxCodeTTL))
	}
	if s.MaxBodyBytes < 1024 {
		return configErr("MaxBodyBytes", "must be at least 1024")
	}
	return nil
}
