package resource

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// The official Go MCP SDK (github.com/modelcontextprotocol/go-sdk) reads
// the caller's identity as an auth.TokenInfo from the request context,
// where its own auth.RequireBearerToken puts it: its Streamable HTTP
// handler refuses a session to a user other than the one who opened it
// (comparing TokenInfo.UserID), and hands the value of each request to
// the handlers as req.Extra.TokenInfo. The middleware fills it in the same
// way for every request it lets through.

// sdkExtraKey is the auth.TokenInfo.Extra entry that holds the request's
// [TokenInfo], for [TokenInfoFromSDK].
const sdkExtraKey = "mcpauth.resource.TokenInfo"

// TokenInfoFromSDK returns the identity the middleware validated for the
// request whose go-sdk auth.TokenInfo is ti, or nil when ti is nil or not
// the middleware's. It is the way for a tool of a stateful go-sdk server to
// learn who is calling:
//
//	info := resource.TokenInfoFromSDK(req.Extra.TokenInfo)
//
// With stateful go-sdk servers the context a tool handler receives comes
// from the request that opened the session (initialize), so
// [TokenInfoFromContext] on it reports the token of that request, with the
// scopes of that time, while req.Extra.TokenInfo belongs to the request
// being served: after a step-up or a refresh only the latter is current.
// In stateless mode both are the current request's. The value is the same
// per-request copy [TokenInfoFromContext] returns for that request.
func TokenInfoFromSDK(ti *auth.TokenInfo) *TokenInfo {
	if ti == nil {
		return nil
	}
	info, _ := ti.Extra[sdkExtraKey].(*TokenInfo)
	return info
}

// sdkInfo returns the request's go-sdk identity, made on first use: UserID
// is issuer "#" principal (the subject, or the client_id of a token
// without one), Scopes the granted scopes, Expiration "exp", and Extra the
// claims, decoded, plus the request's TokenInfo under an entry of the
// middleware's (see [TokenInfoFromSDK]). Like the TokenInfo, it belongs to
// the request.
func (ra *requestAuth) sdkInfo() *auth.TokenInfo {
	if si := ra.sdk.Load(); si != nil {
		return &si.info
	}
	info := ra.tokenInfo()
	ra.mu.Lock()
	defer ra.mu.Unlock()
	si := ra.sdk.Load()
	if si == nil {
		si = new(sdkInfo)
		claims := ra.av.decodedClaims(ra.v.clock.Now())
		extra := make(map[string]any, len(claims)+1)
		for k, c := range claims {
			extra[k] = cloneJSON(c)
		}
		extra[sdkExtraKey] = info
		verified := ra.av.info // not info, which the handler may have changed
		si.info = auth.TokenInfo{
			Scopes:     copyStrings(verified.Scopes, si.scopes[:]),
			Expiration: verified.Expiry,
			UserID:     verified.Issuer + "#" + principal(verified),
			Extra:      extra,
		}
		ra.sdk.Store(si)
	}
	return &si.info
}

// decodedClaimsOverhead estimates the memory of decoded claims beyond
// decodedClaimsFactor times their JSON length (measured for RFC 9068
// access tokens: about 940 bytes for a 190-byte payload).
const (
	decodedClaimsFactor   = 5
	decodedClaimsOverhead = 128
)

// decodedClaims returns av's claims decoded (now: for the cache's accounting),
// decoding them on first use (and counting them in the size of av's cache
// entry). The map is shared by every request presenting the token: it is only
// ever read, and copied (cloneJSON) before a handler sees it.
func (av *authValue) decodedClaims(now time.Time) map[string]any {
	if m := av.decoded.Load(); m != nil {
		return *m
	}
	m := map[string]any{}
	_ = json.Unmarshal(av.info.Claims, &m) // a verified JSON object
	if av.decoded.CompareAndSwap(nil, &m) && av.cache != nil {
		av.cache.grow(av, int64(decodedClaimsFactor*len(av.info.Claims)+decodedClaimsOverhead), now)
	}
	return *av.decoded.Load()
}

// cloneJSON deep-copies a value decoded from JSON: objects and arrays are
// copied, strings, numbers, booleans and null (immutable) are shared.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneJSON(e)
		}
		return s
	}
	return v
}

// sdkTokenInfoKey returns the key go-sdk looks its auth.TokenInfo up
// with, learnt by asking auth.TokenInfoFromContext once (the key's type is
// unexported), or nil if it asks for none.
func sdkTokenInfoKey() any {
	p := &keyProbe{Context: context.Background()}
	_ = auth.TokenInfoFromContext(p)
	return p.key
}

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	if p.key == nil {
		p.key = key
	}
	return nil
}
