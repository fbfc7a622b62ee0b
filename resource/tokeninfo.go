package resource

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// TokenInfo is the validated identity behind a request: what the wrapped
// handler may rely on instead of the token itself (RS-19). Values are shared
// between requests presenting the same token (through the verified-token
// cache) and must be treated as read-only.
type TokenInfo struct {
	// Scheme is the authentication scheme the token came with: "Bearer",
	// or "DPoP" for a DPoP-bound token (whose proof the middleware checked
	// for this request).
	Scheme string
	// Issuer is the validated "iss".
	Issuer string
	// Subject is "sub"; empty if the token has none.
	Subject string
	// ClientID is "client_id"; empty if the token has none.
	ClientID string
	// Audience is "aud"; it contains the resource.
	Audience []string
	// Scopes are the granted scopes from "scope", as issued (before the
	// policy's implied scopes are added).
	Scopes []string
	// Expiry is "exp".
	Expiry time.Time
	// IssuedAt is "iat"; zero if absent.
	IssuedAt time.Time
	// ID is "jti"; empty if absent.
	ID string
	// JKT is "cnf"."jkt" (RFC 9449 §6): the JWK SHA-256 thumbprint of the
	// key the token is bound to, which the request's DPoP proof was signed
	// with. Empty for bearer tokens.
	JKT string
	// Claims is the raw JSON claims object: the JWT payload, or the
	// introspection response.
	Claims json.RawMessage
}

// HasScope reports whether the token was granted scope s literally (without
// the policy's implied scopes; see [Verifier.Grants] for those).
func (t *TokenInfo) HasScope(s string) bool { return t != nil && slices.Contains(t.Scopes, s) }

// authValue is the result of a verification: what the middleware puts in
// the request context (the identity, and the raw token for the passthrough
// guard, never exported) and, when cached, the cache entry itself, so a
// verification costs one allocation for all three.
type authValue struct {
	info  *TokenInfo
	token string
	data  TokenInfo // storage info points to, when allocated together
	bound bool      // the token has a "cnf" claim (RFC 7800)
	aud1  [1]string // storage of a single-string "aud" (info.Audience)
	// storage of up to scopeInline scopes (info.Scopes); never appended
	// to in place: info.Scopes has no spare capacity.
	scopes [scopeInline]string

	// Cache bookkeeping (see tokenCache).
	key   uint64
	until time.Time
	size  int64
}

// newAuthValue allocates a result whose info lives in the same object.
func newAuthValue(token string) *authValue {
	av := &authValue{token: token}
	av.info = &av.data
	return av
}

type ctxKey struct{}

// TokenInfoFromContext returns the identity the middleware validated for
// the request whose context is ctx, or nil if there is none.
func TokenInfoFromContext(ctx context.Context) *TokenInfo {
	if av, ok := ctx.Value(ctxKey{}).(*authValue); ok {
		return av.info
	}
	return nil
}

// ContextWithTokenInfo returns a copy of ctx carrying info, for tests of
// handlers that call [TokenInfoFromContext].
func ContextWithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, ctxKey{}, &authValue{info: info})
}

func inboundToken(ctx context.Context) string {
	if av, ok := ctx.Value(ctxKey{}).(*authValue); ok {
		return av.token
	}
	return ""
}
