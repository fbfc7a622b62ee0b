package resource

import (
	"context"
	"net/http"
)

// Middleware wraps an MCP Streamable HTTP handler. For every request, in
// this order (TR-11):
//
//  1. a present Origin that is not allowed gets 403 (TR-01); OPTIONS is
//     answered here, never challenged and never passed on (RS-26);
//  2. the access token is taken from the Authorization header only and
//     verified; failures get 401/400/503 with a challenge (RS-04…RS-10,
//     RS-16…RS-18);
//  3. when the policy has rules beyond its default, the JSON-RPC body is
//     read (size-bounded) and restored, Mcp-Method and Mcp-Name are checked
//     against it (400, -32020), and the operation's scopes are computed
//     from the body, never from headers (RS-15);
//  4. missing scopes get 403 insufficient_scope (RS-12, RS-13).
//
// Every request is authenticated on its own: no session, connection or
// Mcp-Session-Id stands in for a token (RS-20, TR-09). The wrapped handler
// receives the request without its Authorization header, which the
// middleware deletes from the request in place so that no later handler or
// outer middleware can forward or log it (RS-19); the validated identity is
// in the context ([TokenInfoFromContext]).
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.serve(w, r, next)
	})
}

func (v *Verifier) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	origin, err := v.checkOrigin(r)
	if err != nil {
		v.deny(w, r, err, nil, nil)
		return
	}
	if origin != "" {
		setCORS(w, origin)
	}
	if r.Method == http.MethodOptions {
		preflight(w, r, origin)
		return
	}
	cred, err := extractCredential(r, v.maxToken)
	if err != nil {
		r.Header.Del("Authorization")
		v.deny(w, r, err, nil, nil)
		return
	}
	r.Header.Del("Authorization")
	av, err := v.verify(r.Context(), cred.token)
	if err != nil {
		v.deny(w, r, err, nil, nil)
		return
	}
	op, err := v.authorize(r, av.info)
	if err != nil {
		v.deny(w, r, err, av.info, op)
		return
	}
	if v.audit != nil || v.logger != nil {
		v.emit(r, DecisionAllow, 0, nil, av.info, op)
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, av)))
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
func (v *Verifier) deny(w http.ResponseWriter, r *http.Request, err error, info *TokenInfo, op *mcpMessage) {
	resp := v.writeError(w, err)
	if v.audit != nil || v.logger != nil {
		d := DecisionDeny
		if resp.status == http.StatusForbidden && classOf(err) == ErrInsufficientScope {
			d = DecisionStepUp
		}
		v.emit(r, d, resp.status, err, info, op)
	}
}
