package jwtassert

import (
	"cmp"
	"context"
	"crypto"
	"errors"
	"io"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

// Wire constants of JWT client authentication.
const (
	// ClientAssertionType is the "client_assertion_type" value that
	// announces a JWT client assertion (RFC 7523 §2.2).
	ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// ClientAuthenticationJWTType is the explicit "typ" of a client
	// assertion (draft-ietf-oauth-rfc7523bis §4, media type
	// application/client-authentication+jwt).
	ClientAuthenticationJWTType = "client-authentication+jwt"
)

// Client assertion lifetimes.
const (
	// DefaultAssertionLifetime is how long a built client assertion is
	// valid: short, since it is used once.
	DefaultAssertionLifetime = 60 * time.Second
	// DefaultMaxAssertionLifetime is how far in the future a verifier accepts
	// a client assertion's "exp".
	DefaultMaxAssertionLifetime = 5 * time.Minute
)

// ClientAssertionSignerConfig configures a [ClientAssertionSigner].
type ClientAssertionSignerConfig struct {
	// ClientID is the client_id, the "iss" and "sub" of every assertion
	// (RFC 7523 §3 items 1 and 2.B). Required.
	ClientID string
	// Key signs the assertions: an *ecdsa.PrivateKey, *rsa.PrivateKey (2048
	// bits or more), ed25519.PrivateKey or any crypto.Signer over one of
	// those. [ParsePrivateKeyPEM] reads one from PEM. Required.
	Key crypto.Signer
	// Algorithm is the JWS "alg". Empty means ES256/ES384/ES512 by curve,
	// RS256 for RSA, EdDSA for Ed25519; PS256 must be chosen explicitly.
	Algorithm string
	// KeyID is the "kid" header naming the key in the client's registered
	// JWK set. Empty omits it.
	KeyID string
	// Lifetime is exp − iat. Zero means DefaultAssertionLifetime; it must
	// not exceed DefaultMaxAssertionLifetime, which verifiers enforce.
	Lifetime time.Duration
	// Type is the "typ" header. Empty means ClientAuthenticationJWTType
	// (draft-ietf-oauth-rfc7523bis explicit typing); set "JWT" for an
	// authorization server that refuses other values.
	Type string
	// Now is the clock for iat and exp. Nil means time.Now.
	Now func() time.Time
	// Rand is the source of the jti (128 random bits). Nil means
	// crypto/rand.
	Rand io.Reader
}

// ClientAssertionSigner builds private_key_jwt client assertions (RFC 7523
// §2.2 and §3, OpenID Connect Core §9). It is safe for concurrent use.
type ClientAssertionSigner struct {
	clientID string
	life     time.Duration
	s        *Signer
}

// NewClientAssertionSigner validates cfg and returns a signer.
func NewClientAssertionSigner(cfg ClientAssertionSignerConfig) (*ClientAssertionSigner, error) {
	if cfg.ClientID == "" {
		return nil, errors.New("jwtassert: ClientID is required")
	}
	sc := SignerConfig{Key: cfg.Key, Algorithm: cfg.Algorithm, KeyID: cfg.KeyID, Type: cmp.Or(cfg.Type, ClientAuthenticationJWTType), Now: cfg.Now, Rand: cfg.Rand}
	s, life, err := newLifetimeSigner(sc, cfg.Lifetime, DefaultAssertionLifetime, DefaultMaxAssertionLifetime)
	if err != nil {
		return nil, err
	}
	return &ClientAssertionSigner{clientID: cfg.ClientID, life: life, s: s}, nil
}

// Algorithm returns the JWS algorithm of the assertions, for matching
// "token_endpoint_auth_signing_alg_values_supported".
func (c *ClientAssertionSigner) Algorithm() string { return c.s.Algorithm() }

// assertionClaims is the payload of a client assertion.
type assertionClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	JTI string `json:"jti"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
}

// Sign returns a fresh assertion for the "client_assertion" parameter, with
// "client_assertion_type" = [ClientAssertionType]. audience must be the
// authorization server's issuer identifier (RFC 8414 §2) as validated from
// its metadata: draft-ietf-oauth-rfc7523bis requires it as the sole "aud"
// value, replacing RFC 7523's "token endpoint URL MAY be used", which let a
// malicious server obtain assertions valid elsewhere. It is sent as a single
// string. Every call draws a new jti.
func (c *ClientAssertionSigner) Sign(audience string) (string, error) {
	if audience == "" {
		return "", errors.New("jwtassert: audience (the authorization server issuer) is required")
	}
	jti, err := c.s.JTI()
	if err != nil {
		return "", err
	}
	now := c.s.Now()
	return c.s.Sign(assertionClaims{
		Iss: c.clientID, Sub: c.clientID, Aud: audience, JTI: jti,
		Iat: now.Unix(), Exp: now.Add(c.life).Unix(),
	})
}

// ClientAssertionVerifierConfig configures a [ClientAssertionVerifier].
type ClientAssertionVerifierConfig struct {
	// Audiences are the accepted "aud" values. Required, non-empty.
	// draft-ietf-oauth-rfc7523bis: list only this authorization server's
	// issuer identifier; add the token endpoint URL only for clients built
	// to RFC 7523 alone.
	Audiences []string
	// Algorithms is the "alg" allowlist. Nil means ES256, RS256, PS256 and
	// EdDSA; only asymmetric algorithms are accepted.
	Algorithms []string
	// MaxLifetime bounds how far in the future "exp" may lie. Zero means
	// DefaultMaxAssertionLifetime.
	MaxLifetime time.Duration
	// Leeway is the allowed clock skew. Zero means DefaultLeeway.
	Leeway time.Duration
	// RequireExplicitType accepts only "typ" client-authentication+jwt. By
	// default an absent "typ" and "JWT" are accepted too; any other type
	// (at+jwt, dpop+jwt, an ID-JAG...) is always refused.
	RequireExplicitType bool
	// Replay records used (client_id, jti) pairs until the assertion
	// expires. Nil means a private in-memory cache of MaxReplayEntries.
	Replay replay.Store
	// MaxReplayEntries sizes the private cache. Zero means the replay
	// package default.
	MaxReplayEntries int
	// MaxSize bounds the assertion length. Zero means DefaultMaxSize.
	MaxSize int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// ClientAssertionVerifier authenticates clients by private_key_jwt (RFC 7523
// §3 for client authentication) at the token endpoint. It is safe for
// concurrent use.
type ClientAssertionVerifier struct {
	core                *core
	requireExplicitType bool
}

// NewClientAssertionVerifier validates cfg and returns a verifier.
func NewClientAssertionVerifier(cfg ClientAssertionVerifierConfig) (*ClientAssertionVerifier, error) {
	c, err := newCore(coreConfig{
		audiences: cfg.Audiences, algs: cfg.Algorithms, leeway: cfg.Leeway, maxLife: cfg.MaxLifetime, defLife: DefaultMaxAssertionLifetime,
		maxSize: cfg.MaxSize, replay: cfg.Replay, maxReplayEntries: cfg.MaxReplayEntries, now: cfg.Now,
		code: oauthmeta.CodeInvalidClient,
	})
	if err != nil {
		return nil, err
	}
	return &ClientAssertionVerifier{core: c, requireExplicitType: cfg.RequireExplicitType}, nil
}

// ClientAssertion is a verified client assertion.
type ClientAssertion struct {
	// ClientID is the authenticated client ("iss" = "sub").
	ClientID string
	// JTI is the assertion's "jti".
	JTI string
	// KeyID is the "kid" of the key that verified, if the key has one.
	KeyID string
	// Audience is the "aud" claim.
	Audience []string
	// IssuedAt and ExpiresAt are "iat" (zero if absent) and "exp".
	IssuedAt, ExpiresAt time.Time
}

// Verify authenticates clientID with assertion, the "client_assertion"
// parameter, against the client's keys (RFC 7523 §3): the allowlisted alg,
// an acceptable "typ", "iss" = "sub" = clientID, "aud" naming an accepted
// audience, "exp" present and within MaxLifetime, "nbf" and "iat" not in
// the future, "jti" present and never seen before, and the signature. The
// caller checks client_assertion_type and, if the request also carries
// client_id, that it equals clientID. Claims are checked before keys are
// resolved, so an assertion that is plainly wrong never triggers a JWKS
// fetch.
func (v *ClientAssertionVerifier) Verify(ctx context.Context, assertion, clientID string, keys keyset.Source) (*ClientAssertion, error) {
	k := v.core
	p, err := k.parse(assertion, v.typeAccepted)
	if err != nil {
		return nil, err
	}
	c := &p.claims
	switch {
	case clientID == "":
		return nil, k.fail(ErrIssuerMismatch, "no client_id to compare with")
	case c.Issuer == "":
		return nil, k.fail(ErrMissingClaim, "iss")
	case c.Issuer != clientID:
		return nil, k.fail(ErrIssuerMismatch, "")
	case c.Subject == "":
		return nil, k.fail(ErrMissingClaim, "sub")
	case c.Subject != clientID:
		return nil, k.fail(ErrSubjectMismatch, "")
	}
	if err := k.checkAudience(c.Audience); err != nil {
		return nil, err
	}
	exp, err := k.times(c, false)
	if err != nil {
		return nil, err
	}
	if c.ID == "" {
		return nil, k.fail(ErrMissingClaim, "jti")
	}
	key, err := k.verifySignature(ctx, p, keys)
	if err != nil {
		return nil, err
	}
	if err := k.useJTI(ctx, "client-assertion", clientID, c.ID, exp); err != nil {
		return nil, err
	}
	return &ClientAssertion{
		ClientID: clientID, JTI: c.ID, KeyID: key.ID, Audience: c.Audience,
		IssuedAt: optionalDate(c.IssuedAt), ExpiresAt: exp,
	}, nil
}

func (v *ClientAssertionVerifier) typeAccepted(typ string) bool {
	if jwtverify.TypeIs(typ, ClientAuthenticationJWTType) {
		return true
	}
	return !v.requireExplicitType && (typ == "" || jwtverify.TypeIs(typ, "JWT"))
}

// UnverifiedClientID returns the client an assertion claims to authenticate
// ("sub", which must equal "iss"), without verifying anything, so the token
// endpoint can look up that client's keys when the request carries no
// client_id (RFC 7521 §4.2). Never use the result for anything else before
// [ClientAssertionVerifier.Verify] has succeeded with it.
func UnverifiedClientID(assertion string) (string, error) {
	var c jwtverify.Claims
	if len(assertion) > DefaultMaxSize || jwtverify.UnsafeClaimsWithoutVerification(assertion, &c) != nil {
		return "", fail(jwtverify.ErrMalformed, oauthmeta.CodeInvalidClient, "not a compact JWS with JSON claims")
	}
	switch {
	case c.Subject == "":
		return "", fail(ErrMissingClaim, oauthmeta.CodeInvalidClient, "sub")
	case c.Issuer != c.Subject:
		return "", fail(ErrIssuerMismatch, oauthmeta.CodeInvalidClient, "iss differs from sub")
	}
	return c.Subject, nil
}
