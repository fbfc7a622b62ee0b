package authserver

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpauth/mcpauth/clientmeta"
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
	DefaultSubject          = "demo-user"
	DefaultAccessTokenTTL   = 15 * time.Minute
	DefaultRefreshTokenTTL  = 30 * 24 * time.Hour
	DefaultCodeTTL          = 5 * time.Minute
	MaxCodeTTL              = 10 * time.Minute
	DefaultSigningAlgorithm = "ES256"
	DefaultKeyPrePublish    = 10 * time.Minute
	DefaultMaxBodyBytes     = 64 << 10
	DefaultConsentTTL       = 30 * 24 * time.Hour
)

// Config configures [New]. Only Issuer is required; every other zero value
// is documented and safe.
type Config struct {
	// Issuer is the issuer identifier (RFC 8414 §2): an https URL without
	// query or fragment, possibly with a path (https://as.example/tenant1).
	// Endpoints live under it and metadata at its path-inserted well-known
	// URLs. REQUIRED.
	Issuer string
	// InsecureAllowHTTP permits a plain http issuer on a loopback address
	// or "localhost", for tests and local development. False (the zero
	// value) means https only. It never permits http to any other host.
	InsecureAllowHTTP bool

	// Scopes is scopes_supported. A request for any other scope gets
	// invalid_scope. Empty means no scope can be requested.
	Scopes []string
	// DefaultScopes are granted when a request names no scope. Each must
	// be in Scopes. Empty means such requests get no scope.
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
	// the same client, redirect URI, scopes and resources. False (the zero
	// value) asks every time.
	RememberConsent bool
	// Subject is the user every grant is issued for: this server has no
	// login. Empty means [DefaultSubject].
	Subject string

	// AccessTokenTTL is the access token lifetime. Zero means
	// [DefaultAccessTokenTTL].
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the absolute lifetime of a grant and so of its
	// refresh token family. Zero means [DefaultRefreshTokenTTL].
	RefreshTokenTTL time.Duration
	// CodeTTL is the authorization code lifetime, at most [MaxCodeTTL].
	// Zero means [DefaultCodeTTL].
	CodeTTL time.Duration

	// SigningAlgorithm is "ES256", "RS256" or "EdDSA". Empty means
	// [DefaultSigningAlgorithm].
	SigningAlgorithm string
	// KeyRotationInterval makes the server schedule a new signing key when
	// the newest one is this old. Zero means keys rotate only through
	// [Server.RotateSigningKey].
	KeyRotationInterval time.Duration
	// KeyPrePublish is how long a new key is published before it signs.
	// Zero means [DefaultKeyPrePublish].
	KeyPrePublish time.Duration

	// DataDir, when set, keeps signing keys, clients, grants, codes and
	// refresh tokens in DataDir/authserver.db (bbolt), so they survive a
	// restart. New creates the directory (0700) and opens the file; Close
	// closes it. Empty means everything lives in memory.
	DataDir string
	// Storage overrides individual stores. Nil fields use DataDir or
	// memory.
	Storage Storage

	// RateLimit bounds the token, registration, introspection and
	// revocation endpoints. Zero fields take their defaults.
	RateLimit RateLimit
	// MaxBodyBytes caps every request body. Zero means
	// [DefaultMaxBodyBytes].
	MaxBodyBytes int64

	// DPoP configures sender-constrained tokens (RFC 9449). The zero value
	// supports DPoP without nonces; see [DPoPConfig].
	DPoP DPoPConfig
	// TrustedIssuers are the issuers whose JWTs the token endpoint accepts
	// with the JWT-bearer grant (RFC 7523): workload identity platforms and
	// enterprise IdPs issuing ID-JAGs. Empty means the grant is not
	// offered.
	TrustedIssuers []TrustedIssuer
	// IdentityProvider, when set, makes the server also play the enterprise
	// IdP of Enterprise-Managed Authorization: its token endpoint exchanges
	// ID tokens for ID-JAGs (RFC 8693). Nil means it does not.
	IdentityProvider *IdentityProviderConfig
	// KeyFetch configures how JWK sets named by URL (a client's jwks_uri,
	// a trusted issuer's JWKSURI) are fetched. The zero value is strict:
	// https to public addresses only.
	KeyFetch KeyFetchConfig

	// InsecureFaults makes the server misbehave on purpose, to test
	// clients. The zero value is correct behaviour.
	InsecureFaults Faults

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
}

func (c *Config) withDefaults() settings {
	s := settings{Config: *c}
	if s.Subject == "" {
		s.Subject = DefaultSubject
	}
	if s.AccessTokenTTL == 0 {
		s.AccessTokenTTL = DefaultAccessTokenTTL
	}
	if s.RefreshTokenTTL == 0 {
		s.RefreshTokenTTL = DefaultRefreshTokenTTL
	}
	if s.CodeTTL == 0 {
		s.CodeTTL = DefaultCodeTTL
	}
	if s.SigningAlgorithm == "" {
		s.SigningAlgorithm = DefaultSigningAlgorithm
	}
	if s.KeyPrePublish == 0 {
		s.KeyPrePublish = DefaultKeyPrePublish
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
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
		{"KeyRotationInterval", s.KeyRotationInterval + 1},
	} {
		if d.v <= 0 {
			return configErr(d.name, "must be positive")
		}
	}
	if s.CodeTTL > MaxCodeTTL {
		return configErr("CodeTTL", fmt.Sprintf("must be at most %s", MaxCodeTTL))
	}
	if s.MaxBodyBytes < 1024 {
		return configErr("MaxBodyBytes", "must be at least 1024")
	}
	return nil
}
