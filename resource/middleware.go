package resource

import (
	"context"
	"net/http"

	"github.com/mcpauth/mcpauth/internal/dpop"
)

// Middleware wraps an MCP Streamable HTTP handler. For every request, in
// this order (TR-11):
//
//  1. a present Origin that is not allowed gets 403 (TR-01); OPTIONS is
//     answered here, never challenged and never passed on (RS-26);
//  2. the access token is taken from the Authorization header only and
//     verified; failures get 401/400/503 with a challenge (RS-04…RS-10,
//     RS-16…RS-18); with DPoP enabled ([DPoPConfig]), a token presented
//     with the DPoP scheme must be bound to the key of the request's one
//     DPoP proof, which is checked for this request (RFC 9449 §4.3, §7.1)
//     even when the token itself comes from the verified-token cache;
//  3. when the policy has rules beyond its default, the JSON-RPC body is
//     read (size-bounded) and restored, Mcp-Method and Mcp-Name are checked
//     against it (400, -32020), and the operation's scopes are computed
//     from the body, never from headers (RS-15);
//  4. missing scopes get 403 insufficient_scope (RS-12, RS-13).
//
// Every request is authenticated on its own: no session, connection or
// Mcp-Session-Id stands in for a token (RS-20, TR-09). The wrapped handler
// receives the request without its Authorization header (nor, with DPoP
// enabled, its DPoP header), which the middleware deletes from the request
// in place so that no later handler or outer middleware can forward or log
// it (RS-19); the validated identity is in the context
// ([TokenInfoFromContext]).
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.serve(w, r, next)
	})
}

func (v *Verifier) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	origin, err := v.checkOrigin(r)
	if err != nil {
		v.deny(w, r, err, outcome{})
		return
	}
	if origin != "" {
		setCORS(w, origin, v.exposeHdrs)
	}
	if r.Method == http.MethodOptions {
		preflight(w, r, origin)
		return
	}
	cred, err := extractCredential(r, v.maxToken, v.dpop != nil)
	r.Header.Del("Authorization")
	o := outcome{scheme: cred.scheme}
	var av *authValue
	if err == nil {
		av, err = v.authenticate(r, cred, &o)
	}
	if err != nil {
		v.deny(w, r, err, o)
		return
	}
	o.info = av.info
	o.op, err = v.authorize(r, av.info)
	if err != nil {
		v.deny(w, r, err, o)
		return
	}
	if v.audit != nil || v.logger != nil {
		v.emit(r, DecisionAllow, 0, nil, o)
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, av)))
}

// authenticate verifies the credential and, for the DPoP scheme, the
// request's proof. With DPoP enabled the DPoP header is removed from the
// request whatever the scheme; a Bearer request ignores it. The cheap
// refusals (no single proof, Bearer where DPoP is required) come before
// the token check, the token check (possibly a cache hit) before the
// proof's signature, so that only a request with a valid token, and a
// proof signed by the key that token is bound to, can make a proof consume
// a replay-cache entry.
func (v *Verifier) authenticate(r *http.Request, cred credential, o *outcome) (*authValue, error) {
	var proof string
	if v.dpop != nil {
		var err error
		if cred.scheme == schemeDPoP {
			proof, err = dpop.ProofFromHeader(r.Header)
		}
		r.Header.Del(dpopHeaderKey)
		switch {
		case err != nil:
			return nil, dpopReason(err)
		case cred.scheme == schemeBearer && v.dpop.mode == DPoPRequired:
			return nil, ErrDPoPRequired
		}
	}
	av, err := v.verify(r.Context(), cred.token, cred.scheme, cred.shape)
	if av != nil {
		o.info = av.info
	}
	if err != nil || cred.scheme != schemeDPoP {
		return av, err
	}
	if err := v.dpop.checkProof(r.Context(), r.Method, v.resource, proof, cred.token, av.info.JKT); err != nil {
		return av, err
	}
	o.proofOK = true
	return av, nil
}

// authorize applies the scope policy to the request.
func (v *Verifier) authorize(r *http.Request, info *TokenInfo) (*mcpMessage, error) {
	p := v.policy
	if p == nil {
		return nil, nil
	}
	required := p.def
	var msg *mcpMessage
	if p.needsBody && r.Method == http.MethodPost {
		m, err := v.readMessage(r)
		if err != nil {
			return nil, err
		}
		msg = &m
		if err := checkHeaders(r.Header, msg); err != nil {
			return msg, err
		}
		required = p.required(msg)
	}
	if missing := p.missing(required, info.Scopes); missing != nil {
		return msg, &ScopeError{Required: required, Missing: missing}
	}
	return msg, nil
}

// deny writes the error response and the audit event.
func (v *Verifier) deny(w http.ResponseWriter, r *http.Request, err error, o outcome) {
	resp := v.writeError(w, r, err, o.scheme)
	if v.audit != nil || v.logger != nil {
		d := DecisionDeny
		if resp.status == http.StatusForbidden && classOf(err) == ErrInsufficientScope {
			d = DecisionStepUp
		}
		v.emit(r, d, resp.status, err, o)
	}
}
