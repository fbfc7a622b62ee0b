package jwtassert

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Wire constants of the Identity Assertion JWT Authorization Grant
// (draft-ietf-oauth-identity-assertion-authz-grant, used by the MCP
// Enterprise-Managed Authorization extension).
const (
	// IDJAGType is the "typ" header of an ID-JAG (§3).
	IDJAGType = "oauth-id-jag+jwt"
)

// DefaultIDJAGLifetime is how long a built ID-JAG is valid.
const DefaultIDJAGLifetime = 5 * time.Minute

// IDJAGSignerConfig configures an [IDJAGSigner]: the IdP side.
type IDJAGSignerConfig struct {
	// Issuer is the IdP's issuer identifier, the "iss" of every grant.
	// Required.
	Issuer string
	// Key signs the grants (see ClientAssertionSignerConfig.Key). Required.
	Key crypto.Signer
	// Algorithm is the JWS "alg". Empty means the key's default.
	Algorithm string
	// KeyID is the "kid" header, naming the key in the IdP's JWKS.
	KeyID string
	// Lifetime is exp − iat. Zero means DefaultIDJAGLifetime; at most one
	// hour.
	Lifetime time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Rand is the source of the jti (128 random bits). Nil means
	// crypto/rand.
	Rand io.Reader
}

// IDJAGSigner issues ID-JAGs (draft-ietf-oauth-identity-assertion-authz-grant
// §3), for an authorization server playing the IdP in tests and demos. It is
// safe for concurrent use.
type IDJAGSigner struct {
	issuer string
	life   time.Duration
	s      *Signer
}

// NewIDJAGSigner validates cfg and returns a signer.
func NewIDJAGSigner(cfg IDJAGSignerConfig) (*IDJAGSigner, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("jwtassert: Issuer is required")
	}
	sc := SignerConfig{Key: cfg.Key, Algorithm: cfg.Algorithm, KeyID: cfg.KeyID, Type: IDJAGType, Now: cfg.Now, Rand: cfg.Rand}
	s, life, err := newLifetimeSigner(sc, cfg.Lifetime, DefaultIDJAGLifetime, DefaultMaxGrantLifetime)
	if err != nil {
		return nil, err
	}
	return &IDJAGSigner{issuer: cfg.Issuer, life: life, s: s}, nil
}

// IDJAGClaims are the per-grant claims of an ID-JAG.
type IDJAGClaims struct {
	// Subject is "sub", the user's identifier at the resource authorization
	// server. Required.
	Subject string
	// Audience is "aud", the issuer identifier of the resource
	// authorization server (the MCP server's authorization server).
	// Required.
	Audience string
	// ClientID is "client_id", the client's identifier at the resource
	// authorization server. Required.
	ClientID string
	// Resource is "resource": the MCP server's resource identifier(s)
	// (RFC 8707). Optional; MCP requires it to be the MCP server's when set.
	Resource []string
	// Scope is "scope", joined with spaces. Optional.
	Scope []string
	// Extra holds further identity claims (email, amr, acr, auth_time,
	// tenant). Names this package sets are refused.
	Extra map[string]any
}

// idjagClaims is the payload of an ID-JAG.
type idjagClaims struct {
	Iss      string             `json:"iss"`
	Sub      string             `json:"sub"`
	Aud      string             `json:"aud"`
	ClientID string             `json:"client_id"`
	JTI      string             `json:"jti"`
	Iat      int64              `json:"iat"`
	Exp      int64              `json:"exp"`
	Resource oauthmeta.Audience `json:"resource,omitempty"`
	Scope    string             `json:"scope,omitempty"`
}

// Sign returns a new ID-JAG with typ oauth-id-jag+jwt and the claims of §3:
// iss, sub, aud, client_id, jti (fresh), iat, exp, and resource, scope and
// Extra when given.
func (s *IDJAGSigner) Sign(c IDJAGClaims) (string, error) {
	if c.Subject == "" || c.Audience == "" || c.ClientID == "" {
		return "", errors.New("jwtassert: ID-JAG needs Subject, Audience and ClientID")
	}
	if slices.ContainsFunc(c.Scope, func(sc string) bool { return !oauthmeta.ValidScopeToken(sc) }) {
		return "", errors.New("jwtassert: invalid scope token")
	}
	jti, err := s.s.JTI()
	if err != nil {
		return "", err
	}
	now := s.s.Now()
	claims := idjagClaims{
		Iss: s.issuer, Sub: c.Subject, Aud: c.Audience, ClientID: c.ClientID, JTI: jti,
		Iat: now.Unix(), Exp: now.Add(s.life).Unix(), Resource: c.Resource, Scope: oauthmeta.FormatScope(c.Scope),
	}
	if len(c.Extra) == 0 {
		return s.s.Sign(claims)
	}
	merged, err := mergeClaims(claims, c.Extra)
	if err != nil {
		return "", err
	}
	return s.s.Sign(merged)
}

// mergeClaims adds extra to the registered claims, refusing any overlap.
func mergeClaims(registered any, extra map[string]any) (map[string]any, error) {
	data, err := json.Marshal(registered)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	for name, v := range extra {
		switch name {
		case "iss", "sub", "aud", "client_id", "jti", "iat", "exp", "nbf", "resource", "scope":
			return nil, fmt.Errorf("jwtassert: extra claim %q is set by the signer", name)
		}
		m[name] = v
	}
	return m, nil
}
