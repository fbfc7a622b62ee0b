package jwtassert

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

// DefaultMaxGrantLifetime is how far in the future a verifier accepts an
// authorization grant's "exp": one hour, the common lifetime of platform
// workload tokens (Kubernetes service account tokens, cloud identity
// tokens). ID-JAGs are typically valid for five minutes.
const DefaultMaxGrantLifetime = time.Hour

// Profile selects the rules a [GrantVerifier] applies on top of RFC 7523 §3.
type Profile int

const (
	// ProfileJWTBearer is the plain JWT authorization grant of RFC 7523
	// §2.1, as used for workload identity federation: "typ" is checked
	// against GrantVerifierConfig.Type, "jti" is required (unless
	// InsecureAllowMissingJTI), "iat" is optional, and a "client_id" claim,
	// if present, must name the presenting client when one is known.
	ProfileJWTBearer Profile = iota
	// ProfileIDJAG is the Identity Assertion JWT Authorization Grant
	// (draft-ietf-oauth-identity-assertion-authz-grant §3, MCP
	// Enterprise-Managed Authorization): "typ" must be oauth-id-jag+jwt, and
	// "client_id", "jti" and "iat" are required, "client_id" naming the
	// client that presents the grant.
	ProfileIDJAG
	// ProfileIDToken is an OpenID Connect ID token presented to an identity
	// provider as the subject_token of an RFC 8693 token exchange (the IdP
	// side of Enterprise-Managed Authorization): "typ" untyped or "JWT",
	// "iat" required, "jti" optional and never recorded (an ID token vouches
	// for a login and may be exchanged while it is valid), "aud" among
	// Audiences (the client IDs of the IdP's clients; the caller compares
	// it with the authenticated client), "client_id" not interpreted.
	ProfileIDToken
)

// TrustedIssuer is an issuer whose JWTs a [GrantVerifier] accepts as
// authorization grants, with its own keys.
type TrustedIssuer struct {
	// Issuer is the exact "iss" value. Required.
	Issuer string
	// Keys resolves the issuer's verification keys (a static set, or a JWKS
	// cache fed through the SSRF-safe fetcher). Required.
	Keys keyset.Source
}

// GrantVerifierConfig configures a [GrantVerifier].
type GrantVerifierConfig struct {
	// Audiences are the accepted "aud" values. Required, non-empty: this
	// authorization server's issuer identifier (draft-ietf-oauth-rfc7523bis;
	// ID-JAG §3), plus its token endpoint URL where a profile asks for it
	// (the MCP workload identity federation extension does).
	Audiences []string
	// Issuers are the trusted issuers. Required, non-empty; an "iss" not
	// listed here is refused before any key is looked up.
	Issuers []TrustedIssuer
	// Profile selects ProfileJWTBearer (the zero value) or ProfileIDJAG.
	Profile Profile
	// Type is the "typ" a ProfileJWTBearer grant must carry. Empty means
	// untyped or "JWT" (what platform tokens use); types of other JWT kinds
	// (at+jwt, dpop+jwt, client-authentication+jwt, oauth-id-jag+jwt) are
	// then refused. Must be empty with ProfileIDJAG.
	Type string
	// Algorithms is the "alg" allowlist. Nil means ES256, RS256, PS256 and
	// EdDSA; only asymmetric algorithms are accepted.
	Algorithms []string
	// MaxLifetime bounds how far in the future "exp" may lie. Zero means
	// DefaultMaxGrantLifetime.
	MaxLifetime time.Duration
	// Leeway is the allowed clock skew. Zero means DefaultLeeway.
	Leeway time.Duration
	// InsecureAllowMissingJTI accepts ProfileJWTBearer grants without "jti"
	// (RFC 7523 makes it optional; some platform tokens lack it). Such a
	// grant can be replayed until it expires. Ignored for ProfileIDJAG.
	InsecureAllowMissingJTI bool
	// Replay records used (issuer, jti) pairs until the grant expires. Nil
	// means a private in-memory cache of MaxReplayEntries entries.
	Replay replay.Store
	// MaxReplayEntries sizes the private cache. Zero means the replay
	// package default.
	MaxReplayEntries int
	// MaxSize bounds the assertion length. Zero means DefaultMaxSize.
	MaxSize int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// GrantVerifier verifies JWT authorization grants (RFC 7523 §2.1 and §3) for
// the jwt-bearer grant type: workload identity assertions and ID-JAGs. It is
// safe for concurrent use.
type GrantVerifier struct {
	core       *core
	issuers    map[string]keyset.Source
	profile    Profile
	typ        string
	allowNoJTI bool
}

// NewGrantVerifier validates cfg and returns a verifier.
func NewGrantVerifier(cfg GrantVerifierConfig) (*GrantVerifier, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("jwtassert: at least one trusted issuer is required")
	}
	issuers := make(map[string]keyset.Source, len(cfg.Issuers))
	for _, ti := range cfg.Issuers {
		if ti.Issuer == "" || ti.Keys == nil {
			return nil, errors.New("jwtassert: a trusted issuer needs Issuer and Keys")
		}
		if _, dup := issuers[ti.Issuer]; dup {
			return nil, fmt.Errorf("jwtassert: issuer %q listed twice", ti.Issuer)
		}
		issuers[ti.Issuer] = ti.Keys
	}
	switch cfg.Profile {
	case ProfileJWTBearer:
	case ProfileIDJAG, ProfileIDToken:
		if cfg.Type != "" {
			return nil, errors.New("jwtassert: Type must be empty with ProfileIDJAG and ProfileIDToken")
		}
	default:
		return nil, errors.New("jwtassert: unknown Profile")
	}
	c, err := newCore(coreConfig{
		audiences: cfg.Audiences, algs: cfg.Algorithms, leeway: cfg.Leeway, maxLife: cfg.MaxLifetime, defLife: DefaultMaxGrantLifetime,
		maxSize: cfg.MaxSize, replay: cfg.Replay, maxReplayEntries: cfg.MaxReplayEntries, now: cfg.Now,
		code: oauthmeta.CodeInvalidGrant,
	})
	if err != nil {
		return nil, err
	}
	return &GrantVerifier{
		core: c, issuers: issuers,
		profile: cfg.Profile, typ: cfg.Type, allowNoJTI: cfg.InsecureAllowMissingJTI && cfg.Profile == ProfileJWTBearer,
	}, nil
}

// Grant holds the claims of a verified authorization grant.
type Grant struct {
	// Issuer and Subject are "iss" and "sub": the grant is for Subject as
	// known to Issuer (a workload, or a user of the IdP).
	Issuer, Subject string
	// Audience is "aud".
	Audience []string
	// ClientID is the "client_id" claim ("" if absent): the client the
	// grant was issued to (ID-JAG).
	ClientID string
	// Resource is the "resource" claim (RFC 8707 resource indicators).
	Resource []string
	// Scope is the "scope" claim split into tokens (RFC 6749 §3.3).
	Scope []string
	// JTI is "jti" ("" only with InsecureAllowMissingJTI).
	JTI string
	// IssuedAt, NotBefore (zero if absent) and ExpiresAt.
	IssuedAt, NotBefore, ExpiresAt time.Time
	// Claims is the verified payload, for claims this package does not
	// interpret (email, amr, tenant, platform-specific workload claims);
	// decode it with a strict decoder.
	Claims []byte
}

// Verify checks assertion, the "assertion" parameter of a jwt-bearer token
// request, and returns its claims. clientID is the client authenticated on
// the request ("" if none); with ProfileIDJAG it is required and must equal
// the "client_id" claim.
//
// Checks, cheapest first: size, shape and alg; "typ" for the profile; "iss"
// among the trusted issuers; "sub"; "aud"; "exp", "nbf", "iat"; "jti";
// "client_id"; "scope" syntax; then the issuer's keys are resolved and the
// signature is checked; last the jti is recorded. Errors map to
// invalid_grant (RFC 7523 §3.1).
func (v *GrantVerifier) Verify(ctx context.Context, assertion, clientID string) (*Grant, error) {
	k := v.core
	p, err := k.parse(assertion, v.typeAccepted)
	if err != nil {
		return nil, err
	}
	c := &p.claims
	keys, err := v.checkClaims(c, clientID)
	if err != nil {
		return nil, err
	}
	exp, err := k.times(c, v.profile != ProfileJWTBearer)
	if err != nil {
		return nil, err
	}
	scope, err := oauthmeta.ParseScope(c.Scope)
	if err != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "scope")
	}
	if _, err := k.verifySignature(ctx, p, keys); err != nil {
		return nil, err
	}
	if c.ID != "" && v.profile != ProfileIDToken {
		if err := k.useJTI(ctx, "grant", c.Issuer, c.ID, exp); err != nil {
			return nil, err
		}
	}
	return &Grant{
		Issuer: c.Issuer, Subject: c.Subject, Audience: c.Audience, ClientID: c.ClientID, Resource: c.Resource, Scope: scope,
		JTI: c.ID, IssuedAt: optionalDate(c.IssuedAt), NotBefore: optionalDate(c.NotBefore), ExpiresAt: exp, Claims: p.payload,
	}, nil
}

// checkClaims applies the issuer, subject, audience, jti and client_id rules
// and returns the issuer's key source.
func (v *GrantVerifier) checkClaims(c *wireClaims, clientID string) (keyset.Source, error) {
	k := v.core
	if c.Issuer == "" {
		return nil, k.fail(ErrMissingClaim, "iss")
	}
	keys, ok := v.issuers[c.Issuer]
	if !ok {
		return nil, k.fail(ErrUnknownIssuer, "")
	}
	if c.Subject == "" {
		return nil, k.fail(ErrMissingClaim, "sub")
	}
	if err := k.checkAudience(c.Audience); err != nil {
		return nil, err
	}
	if c.ID == "" && !v.allowNoJTI && v.profile != ProfileIDToken {
		return nil, k.fail(ErrMissingClaim, "jti")
	}
	if v.profile == ProfileIDToken {
		return keys, nil
	}
	if v.profile == ProfileIDJAG {
		switch {
		case c.ClientID == "":
			return nil, k.fail(ErrMissingClaim, "client_id")
		case clientID == "" || c.ClientID != clientID:
			return nil, k.fail(ErrClientIDMismatch, "")
		}
	} else if c.ClientID != "" && clientID != "" && c.ClientID != clientID {
		return nil, k.fail(ErrClientIDMismatch, "")
	}
	return keys, nil
}

func (v *GrantVerifier) typeAccepted(typ string) bool {
	if v.profile == ProfileIDJAG {
		return jwtverify.TypeIs(typ, IDJAGType)
	}
	if v.typ != "" {
		return jwtverify.TypeIs(typ, v.typ)
	}
	return typ == "" || jwtverify.TypeIs(typ, "JWT")
}
