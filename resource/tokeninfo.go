package resource

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TokenInfo is the validated identity behind a request: what the wrapped
// handler may rely on instead of the token itself. Every value the
// package hands out ([TokenInfoFromContext], [Verifier.Verify]) is a copy
// of its own, slices and claims included: changing it affects nobody else,
// and never how a later request with the same token is judged, which the
// verified-token cache decides from its own record.
type TokenInfo struct {
	// Scheme is the authentication scheme the token came with: "Bearer",
	// or "DPoP" for a DPoP-bound token (whose proof the middleware checked
	// for this request).
	Scheme string
	// Issuer is the validated "iss".
	Issuer string
	// Subject is "sub"; empty if the token has none.
	Subject string
	// ClientID is the client the token was issued to: "client_id", or the
	// claim the issuer's [Profile] names (such as "azp" or "cid"); empty
	// if the token has none.
	ClientID string
	// Tenant is the "tid" claim of a token whose issuer's [Profile] reads
	// it (the Entra presets, or one with TenantIDs); empty otherwise.
	Tenant string
	// Audience is "aud"; it contains the resource, or an audience of the
	// issuer's [Profile], or is empty when the profile accepts a missing
	// audience.
	Audience []string
	// Scopes are the granted scopes from "scope", or from the claims the
	// issuer's [Profile] names, as issued (before the policy's implied
	// scopes are added).
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
	// Actors is the delegation chain of the "act" claim (RFC 8693 §4.1),
	// the current actor first and the first delegate last, each without
	// its nested Act; nil for a token no one obtained on behalf of its
	// subject. A malformed "act", or one nested deeper than
	// oauthmeta.MaxActorDepth, makes the token invalid.
	Actors []oauthmeta.Actor
}

// Delegated reports whether the token was obtained by an actor on behalf
// of its subject (it has an actor chain).
func (t *TokenInfo) Delegated() bool { return t != nil && len(t.Actors) > 0 }

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
	// storage of up to scopeInline scopes (info.Scopes); never appended
	// to in place: info.Scopes has no spare capacity.
	scopes [scopeInline]string
	// storage of a single audience (info.Audience), filled by the claims
	// decoder; info.Audience has no spare capacity.
	aud [1]string
	// values of Derived computed for this verification
	derived derivedList

	// The claims decoded for go-sdk's auth.TokenInfo.Extra, made on first
	// use and never handed out: each request gets a copy (sdkInfo).
	decoded atomic.Pointer[map[string]any]

	// Cache bookkeeping (see tokenCache).
	cache *tokenCache // the cache holding the value, if any
	key   uint64
	until time.Time
	size  int64
	inMap bool // the shard's map holds this value (under the shard's lock)
}

// newAuthValue allocates a result whose info lives in the same object.
func newAuthValue(token string) *authValue {
	av := &authValue{token: token}
	av.info = &av.data
	return av
}

type ctxKey struct{}

// TokenInfoFromContext returns the identity the middleware validated for
// the request whose context is ctx (or a context derived from it), or nil
// if there is none. The value belongs to that request: every call for the
// same request returns the same pointer, and no other request sees it.
//
// It is the identity of the request the context came from, which is not
// always the one being served: a stateful go-sdk server runs every tool of
// a session with the context of the session's initialize request, so
// there it reports whoever opened the session, with the scopes of that
// time (unchanged by a later step-up). Tools of a stateful go-sdk server
// use [TokenInfoFromSDK](req.Extra.TokenInfo) instead, which is always the
// current request's. In go-sdk's stateless mode, for mcp-go and for plain
// http.Handlers, the context is the current request's.
func TokenInfoFromContext(ctx context.Context) *TokenInfo {
	switch x := ctx.Value(ctxKey{}).(type) {
	case *requestAuth:
		return x.tokenInfo()
	case *TokenInfo:
		return x
	}
	return nil
}

// ContextWithTokenInfo returns a copy of ctx carrying info, for tests of
// handlers that call [TokenInfoFromContext], which returns info itself.
func ContextWithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, ctxKey{}, info)
}

// inboundToken returns the token of the request whose context is ctx, or
// "".
func inboundToken(ctx context.Context) string {
	if ra, ok := ctx.Value(ctxKey{}).(*requestAuth); ok {
		return ra.av.token
	}
	return ""
}
