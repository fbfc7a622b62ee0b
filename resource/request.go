package resource

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// requestAuth is what the middleware gives one authorized request, in one
// allocation: the request the wrapped handler receives and its context
// (of which it is the innermost layer), the ResponseWriter that binds
// session IDs, and the storage of the replayed body.
//
// The verification av is shared with the verified-token cache and never
// reaches a handler: [TokenInfoFromContext] returns a copy private to the
// request, whose slices and claims have their own storage, and go-sdk gets
// an auth.TokenInfo of its own. Both are made on first use, so a handler
// that never asks costs nothing. Whatever a handler does with them, later
// requests presenting the same token are judged by the cached
// verification.
type requestAuth struct {
	context.Context // the inbound request's context
	v               *Verifier
	av              *authValue

	mu   sync.Mutex // serialises making info and sdk
	info atomic.Pointer[requestInfo]
	sdk  atomic.Pointer[sdkInfo]

	w    sessionWriter
	req  http.Request // the wrapped handler's copy of the request
	body replayBody
	sid  [1]string // storage of the handler's Mcp-Session-Id value
}

// requestInfo is a request's copy of the identity, with the storage of its
// scopes and audience.
type requestInfo struct {
	info   TokenInfo
	scopes [scopeInline]string
	aud    [1]string
}

// sdkInfo is a request's go-sdk identity, with the storage of its scopes,
// apart from requestInfo's: changing one leaves the other as issued.
type sdkInfo struct {
	info   auth.TokenInfo
	scopes [scopeInline]string
}

// Value answers the middleware's key with the request's state, go-sdk's
// key with its auth.TokenInfo, and every other key from the inbound
// request's context.
func (ra *requestAuth) Value(key any) any {
	switch {
	case key == (ctxKey{}):
		return ra
	case key == ra.v.sdkKey && key != nil:
		return ra.sdkInfo()
	}
	return ra.Context.Value(key)
}

// tokenInfo returns the request's own copy of the verified identity.
func (ra *requestAuth) tokenInfo() *TokenInfo {
	if ri := ra.info.Load(); ri != nil {
		return &ri.info
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ri := ra.info.Load()
	if ri == nil {
		ri = new(requestInfo)
		ra.av.info.copyTo(&ri.info, ri.scopes[:], ri.aud[:])
		ra.info.Store(ri)
	}
	return &ri.info
}

// copyTo makes dst a deep copy of t: its Scopes, Audience and Claims share
// no storage with t's. Scopes and Audience go into scopeBuf and audBuf when
// they fit; the copies have no spare capacity, so appending to them
// reallocates.
func (t *TokenInfo) copyTo(dst *TokenInfo, scopeBuf, audBuf []string) {
	*dst = *t
	dst.Scopes = copyStrings(t.Scopes, scopeBuf)
	dst.Audience = copyStrings(t.Audience, audBuf)
	dst.Claims = bytes.Clone(t.Claims)
	dst.Actors = slices.Clone(t.Actors)
}

// clone returns a deep copy of t.
func (t *TokenInfo) clone() *TokenInfo {
	c := new(TokenInfo)
	t.copyTo(c, nil, nil)
	return c
}

func copyStrings(s, buf []string) []string {
	if s == nil {
		return nil
	}
	if len(s) <= len(buf) {
		n := copy(buf, s)
		return buf[:n:n]
	}
	return slices.Clone(s)
}

// smallMapEntries is the most entries a Go map holds in its small form
// (one group, one allocation).
const smallMapEntries = 8

// header returns a header map of the handler's own: h's entries without
// the credential headers, and with a non-empty sid as the Mcp-Session-Id
// value. Like the header of a request copied by http.StripPrefix, the
// value slices are h's: Set, Add and Del on the copy change only the copy
// (net/http's header values have no spare capacity, so Add reallocates).
func (ra *requestAuth) header(h http.Header, dropDPoP bool, sid string) http.Header {
	var out http.Header
	if n := len(h) - 1; n <= smallMapEntries { // n is -1 for an empty header
		// Built entry by entry at the size it ends at, it stays in the
		// map's one-group form: half the memory and allocations of a
		// clone of the larger map that still holds Authorization.
		out = make(http.Header, max(n, 0))
		for k, v := range h {
			if k != "Authorization" {
				out[k] = v
			}
		}
	} else {
		out = maps.Clone(h)
		delete(out, "Authorization")
	}
	if dropDPoP {
		delete(out, dpopHeaderKey)
	}
	if sid != "" {
		ra.sid[0] = sid
		out[sessionHeader] = ra.sid[:]
	}
	return out
}
