package resource

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults applied to zero-valued [Config] fields.
const (
	DefaultLeeway        = 30 * time.Second
	MaxLeeway            = 5 * time.Minute
	DefaultMaxTokenBytes = 8 << 10
	DefaultMaxBodyBytes  = 4 << 20
	DefaultMetadataTTL   = time.Hour
)

// DefaultAlgorithms is the signing algorithm allowlist used when
// [Config.Algorithms] is nil.
func DefaultAlgorithms() []string { return jwa.Defaults(jwa.AccessToken) }

// Config configures a [Verifier]. [New] validates it; the zero value of each
// optional field is documented and never turns a check off.
type Config struct {
	// Resource is the canonical URI of the protected MCP endpoint, for
	// example "https://mcp.example.com/mcp". REQUIRED. It must be https
	// (plain http only to a loopback host with InsecureAllowHTTPLoopback), with
	// no query, fragment or user information. Tokens must name it in "aud"
	// (RFC 8707, RFC 9068 §4), and the metadata document names it
	// byte for byte in "resource" (RFC 9728 §3.3).
	Resource string
	// AudienceAliases are further identifiers accepted in "aud", for a
	// server reachable under several names. Nil means only Resource.
	AudienceAliases []string
	// Issuers are the trusted authorization servers, listed in this order
	// in the metadata's "authorization_servers". REQUIRED, at least one.
	Issuers []Issuer
	// ScopesSupported is advertised in the metadata's "scopes_supported"
	// (RFC 9728 §2). It is separate from what Policy enforces. Nil omits the
	// member. "offline_access" is refused.
	ScopesSupported []string
	// Policy decides which scopes each MCP operation needs. Nil means a
	// valid token for this resource is enough for every operation.
	Policy *Policy
	// Algorithms is the JWS algorithm allowlist: ES256, ES384, ES512, RS256,
	// RS384, RS512, PS256, PS384, PS512 and EdDSA are accepted. Nil means
	// [DefaultAlgorithms]. "none" and HMAC algorithms are refused (RFC 8725
	// §3.1).
	Algorithms []string
	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means
	// [DefaultLeeway]; at most [MaxLeeway].
	Leeway time.Duration
	// Introspection enables RFC 7662 introspection of tokens that are not
	// JWTs. Nil means such tokens are refused as invalid_token.
	Introspection *IntrospectionConfig
	// Cache configures the verified-token cache; the zero value is enabled
	// with default bounds.
	Cache CacheConfig
	// DPoP enables DPoP-bound access tokens (RFC 9449). The zero value
	// disables DPoP: tokens with a "cnf" claim are refused.
	DPoP DPoPConfig
	// AllowedOrigins lists the Origin values (such as
	// "https://app.example.com") allowed besides the resource's own
	// origin. A request with any other Origin gets 403 before
	// authentication. Nil allows only the resource's origin and
	// requests without Origin.
	AllowedOrigins []string
	// SessionKey binds MCP session IDs to users (MCP Security Best Practices,
	// "Session Hijacking"): the Mcp-Session-Id a client sees is the wrapped
	// handler's ID with an HMAC-SHA256 over this resource, the token's issuer
	// and subject (its client_id when it has no subject, the token itself when
	// it has neither) and that ID, checked and stripped on every request, so a
	// request with another user's session ID gets 404 and never reaches the
	// handler. At least [MinSessionKeyBytes] bytes, secret, the same on every
	// replica that serves the resource. Nil means a random key that New makes
	// (crypto/rand) for this Verifier alone: sessions then do not survive a
	// restart and are not accepted by other replicas.
	SessionKey []byte
	// ResourceName is the metadata's "resource_name". Empty omits it.
	ResourceName string
	// ResourceDocumentation is the metadata's "resource_documentation".
	// Empty omits it.
	ResourceDocumentation string
	// MetadataTTL is the max-age of the metadata document. Zero means
	// [DefaultMetadataTTL].
	MetadataTTL time.Duration
	// MaxTokenBytes bounds the length of a token; longer ones are refused
	// before parsing. Zero means [DefaultMaxTokenBytes].
	MaxTokenBytes int
	// MaxBodyBytes bounds the request body read for the scope policy.
	// Zero means [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// KeyRefetchInterval is the minimum time between two fetches of an
	// issuer's keys caused by unknown key IDs, for key sets New creates.
	// Zero means [DefaultRefetchInterval].
	KeyRefetchInterval time.Duration
	// TLSConfig is used to fetch metadata and keys for key sets New
	// creates. Nil means the system roots.
	TLSConfig *tls.Config
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses for
	// Resource, the issuers, and key fetches, for development on one
	// machine. False means https and public addresses only.
	InsecureAllowHTTPLoopback bool
	// RateLimit, when set, bounds the requests of each verified identity,
	// overall and per method or tool (see [RateLimit]). Nil means no
	// limit.
	RateLimit *RateLimit
	// TracerProvider, when set, makes the middleware record an
	// OpenTelemetry span per request (its decision, reason, scheme, DPoP
	// outcome, issuer, client_id, MCP method and tool; never a token,
	// proof, secret or the subject) with child spans for the token check,
	// the DPoP proof check and the policy, and hand the wrapped handler a
	// context holding the request span. The parent is the W3C trace
	// context of the JSON-RPC body's params._meta (traceparent and
	// tracestate, SEP-414) when it has one, else that of the traceparent
	// header. To find _meta without a Policy or RateLimit that reads the
	// body, the middleware then reads bodies of known length up to
	// MaxBodyBytes. Nil means no tracing, at no cost.
	TracerProvider trace.TracerProvider
	// Audit, if set, receives one [Event] per decision. It is called on
	// the request's goroutine and must not block.
	Audit func(context.Context, Event)
	// Logger, if set, also receives every Event as a structured record
	// (denials at Warn, the rest at Info).
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Issuer is one trusted authorization server.
type Issuer struct {
	// Issuer is the issuer identifier, compared byte for byte with "iss".
	// REQUIRED. It may hold the placeholder {tid} once, for a
	// multi-tenant Entra application: see [Profile].TenantIDs.
	Issuer string
	// JWKSURI is the issuer's JWK Set URL. Empty means it is taken from
	// the issuer's validated RFC 8414 metadata on first use. Ignored when
	// Keys is set.
	JWKSURI string
	// Keys resolves the issuer's signing keys. Nil means a [RemoteKeys]
	// that New creates (without I/O) and [Verifier.Close] closes.
	Keys keyset.Source
	// Profile describes the issuer's access tokens when they are not RFC
	// 9068 tokens: an identity provider's preset, the token types,
	// audiences, scope and client claims it uses. The zero value is RFC
	// 9068: typ at+jwt only, the resource in "aud", scopes in "scope".
	Profile Profile
}

// Identifiers returns the issuer identifiers is stands for: Issuer, or for
// a template holding {tid} the template filled with each of
// Profile.TenantIDs, in their order. Errors match [ErrInvalidConfig] and
// name the field. The identifiers themselves are checked by [New].
func (is Issuer) Identifiers() ([]string, error) {
	switch strings.Count(is.Issuer, tenantPlaceholder) {
	case 0:
		return []string{is.Issuer}, nil
	case 1:
	default:
		return nil, &fieldError{field: "Issuer", msg: tenantPlaceholder + " appears more than once"}
	}
	if len(is.Profile.TenantIDs) == 0 {
		return nil, &fieldError{field: "Profile.TenantIDs",
			msg: "an issuer with " + tenantPlaceholder + " needs the tenants it accepts (there is no \"any tenant\")"}
	}
	names := make([]string, 0, len(is.Profile.TenantIDs))
	for _, t := range is.Profile.TenantIDs {
		names = append(names, strings.Replace(is.Issuer, tenantPlaceholder, t, 1))
	}
	return names, nil
}

func (c *Config) validate() error {
	if len(c.Issuers) == 0 {
		return fmt.Errorf("%w: at least one issuer is required", ErrInvalidConfig)
	}
	if c.Leeway < 0 || c.Leeway > MaxLeeway {
		return fmt.Errorf("%w: leeway must be between 0 and %s", ErrInvalidConfig, MaxLeeway)
	}
	if c.MaxTokenBytes < 0 || c.MaxBodyBytes < 0 || c.MetadataTTL < 0 || c.KeyRefetchInterval < 0 {
		return fmt.Errorf("%w: negative limit", ErrInvalidConfig)
	}
	return checkScopes("scopes_supported", c.ScopesSupported)
}

func (c *Config) urlPolicy() oauthmeta.URLPolicy {
	return oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: c.InsecureAllowHTTPLoopback}
}

// canonicalResource checks and canonicalises cfg.Resource.
func canonicalResource(raw string, p oauthmeta.URLPolicy) (string, error) {
	canon, err := oauthmeta.CanonicalResource(raw)
	if err != nil {
		return "", fmt.Errorf("%w: resource: %w", ErrInvalidConfig, err)
	}
	if err := p.CheckURL(canon); err != nil {
		return "", fmt.Errorf("%w: resource: %w", ErrInvalidConfig, err)
	}
	u, _ := url.Parse(canon)
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("%w: resource must not have a query", ErrInvalidConfig)
	}
	return canon, nil
}

// checkScopes validates a configured scope list: never advertise or
// challenge offline_access.
func checkScopes(what string, scopes []string) error {
	for _, s := range scopes {
		if !oauthmeta.ValidScopeToken(s) {
			return fmt.Errorf("%w: %s: invalid scope token", ErrInvalidConfig, what)
		}
		if s == "offline_access" {
			return fmt.Errorf("%w: %s: offline_access must not be advertised or required", ErrInvalidConfig, what)
		}
	}
	return nil
}
