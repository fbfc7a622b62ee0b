package resource

import (
	"context"
	"net/http"
	"slices"

	"github.com/mcpauth/mcpauth/dpop"
)

// Middleware wraps an MCP Streamable HTTP handler. For every request, in
// this order:
//
//  1. a present Origin that is not allowed gets 403; OPTIONS is
//     answered here, never challenged and never passed on;
//  2. the access token is taken from the Authorization header only and
//     verified; failures get 401/400/503 with a challenge; with DPoP enabled
//     ([DPoPConfig]), a token presented with the DPoP scheme must be bound to
//     the key of the request's one DPoP proof, which is checked for this
//     request (RFC 9449 §4.3, §7.1) even when the token itself comes from the
//     verified-token cache;
//  3. an Mcp-Session-Id not issued to the token's user gets 404, as an
//     unknown session (MCP Security Best Practices, "Session Hijacking");
//  4. when the policy has rules beyond its default, the JSON-RPC body is
//     read (size-bounded) and replayed to the handler, Mcp-Method and
//     Mcp-Name are checked against it (400, -32020), and the operation's
//     scopes are computed from the body, never from headers;
//  5. missing scopes get 403 insufficient_scope;
//  6. with [Config.RateLimit], an identity over its limit gets 429 with
//     Retry-After.
//
// Every request is authenticated on its own: no session, connection or
// Mcp-Session-Id stands in for a token. The middleware never
// changes the *http.Request it is given (beyond reading its body): the
// wrapped handler receives a shallow copy with a header of its own, without
// Authorization (nor, with DPoP enabled, DPoP), so that the handler cannot
// forward or log the token, with the body the policy read replayed,
// and with the validated identity in its context ([TokenInfoFromContext]),
// a copy private to that request. The context also carries the identity as
// the official Go SDK's auth.TokenInfo, as its auth.RequireBearerToken
// would set it: UserID is the issuer, "#", and the subject (the client_id
// of a token without one), Scopes the granted scopes, Expiration "exp",
// and Extra the claims (see [TokenInfoFromSDK]).
//
// Session IDs are bound to their user ([Config.SessionKey]): every
// Mcp-Session-Id the handler sets in a response reaches the client with a
// MAC for the request's issuer and subject, and a request whose
// Mcp-Session-Id does not carry the MAC for its own token's user gets 404
// before the handler runs; the handler sees its own ID.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.serve(w, r, next)
	})
}

func (v *Verifier) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	var o outcome
	if v.tracer != nil {
		o.steps = &stepTimes{start: v.clock.Now()}
	}
	origin, err := v.origins.check(r)
	if err != nil {
		v.deny(w, r, err, o)
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
	o.scheme = cred.scheme
	var av *authValue
	if err == nil {
		av, err = v.authenticate(r, cred, &o)
	}
	if err != nil {
		v.deny(w, r, err, o)
		return
	}
	o.info = av.info
	sid, err := v.sessions.check(r, av)
	if err != nil {
		v.deny(w, r, err, o)
		return
	}
	var body []byte
	if o.steps != nil {
		o.steps.policy[0] = v.clock.Now()
	}
	o.op, body, err = v.authorize(r, av.info, o.steps)
	if err == nil && v.limits != nil {
		err = v.limits.check(r.Context(), av.info, o.op, v.clock.Now())
	}
	if o.steps != nil {
		o.steps.policy[1] = v.clock.Now()
	}
	if err != nil {
		v.deny(w, r, err, o)
		return
	}
	if v.audit != nil || v.logger != nil {
		v.emit(r, DecisionAllow, 0, nil, o)
	}
	ctx, end := r.Context(), func() {}
	if o.steps != nil {
		ctx, end = v.traceRequest(r, o.steps, DecisionAllow, 0, nil, &o)
	}
	sw, out := v.forward(ctx, w, r, av, body, sid)
	next.ServeHTTP(sw, out)
	sw.finish()
	end()
}

// authenticate verifies the credential and, for the DPoP scheme, the
// request's proof. A Bearer request ignores a DPoP header (which, with DPoP
// enabled, the wrapped handler does not receive whatever the scheme). The cheap
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
		switch {
		case err != nil:
			return nil, refusal(ErrInvalidDPoPProof, err, true)
		case cred.scheme == schemeBearer && v.dpop.mode == DPoPRequired:
			return nil, errDPoPRequired
		}
	}
	st := o.steps
	if st != nil {
		st.verify[0] = v.clock.Now()
	}
	av, err := v.verify(r.Context(), cred.token, cred.scheme, cred.shape)
	if st != nil {
		st.verify[1] = v.clock.Now()
	}
	if av != nil {
		o.info = av.info
	}
	if err != nil || cred.scheme != schemeDPoP {
		return av, err
	}
	if st != nil {
		st.dpop[0] = v.clock.Now()
	}
	err = v.dpop.checkProof(r.Context(), r.Method, v.resource, proof, cred.token, av.info.JKT)
	if st != nil {
		st.dpop[1] = v.clock.Now()
	}
	if err != nil {
		return av, err
	}
	o.proofOK = true
	return av, nil
}

// authorize applies the scope policy to the request. When the policy
// needs the body, it is read from r and returned, for the wrapped
// handler's copy of the request (non-nil when r had a body).
func (v *Verifier) authorize(r *http.Request, info *TokenInfo, st *stepTimes) (*mcpMessage, []byte, error) {
	var msg *mcpMessage
	var body []byte
	if !v.scanBody && st != nil && r.Method == http.MethodPost && r.ContentLength > 0 && r.ContentLength <= v.maxBody {
		// Tracing alone: read the body for _meta's trace context, and
		// refuse nothing that the middleware would pass without it.
		body, msg = v.traceBody(r, st)
	} else if v.scanBody && r.Method == http.MethodPost {
		var err error
		if body, err = readBody(r, v.maxBody); err != nil {
			return nil, nil, err
		}
		msg = new(mcpMessage)
		if err := msg.scan(body); err != nil {
			return nil, body, err
		}
		if err := checkHeaders(r.Header, msg); err != nil {
			return msg, body, err
		}
		if st != nil {
			st.traceparent, st.tracestate = string(msg.traceparent), string(msg.tracestate)
		}
	}
	p := v.policy
	if p == nil {
		return msg, body, nil
	}
	required := p.def
	if msg != nil {
		required = p.required(msg)
	}
	if p.delegation != nil {
		if err := p.delegation.rule(msg).check(info.Actors); err != nil {
			return msg, body, err
		}
	}
	if missing := p.missing(required, info.Scopes); missing != nil {
		// Required is the policy's own list: the error (and the audit
		// event) get a copy, so that nothing they reach can change the
		// policy for later requests.
		return msg, body, &ScopeError{Required: slices.Clone(required), Missing: missing}
	}
	return msg, body, nil
}

// deny writes the error response, the audit event and the spans.
func (v *Verifier) deny(w http.ResponseWriter, r *http.Request, err error, o outcome) {
	resp := v.writeError(w, r, err, o.scheme)
	if v.audit != nil || v.logger != nil || o.steps != nil {
		d := DecisionDeny
		if resp.status == http.StatusForbidden && classOf(err) == ErrInsufficientScope {
			d = DecisionStepUp
		}
		if v.audit != nil || v.logger != nil {
			v.emit(r, d, resp.status, err, o)
		}
		if o.steps != nil {
			v.traceRequest(r, o.steps, d, resp.status, err, &o)
		}
	}
}

// forward returns what the wrapped handler receives, in context ctx (r's,
// with the request span when tracing): a ResponseWriter
// that binds the session IDs it sets to the request's user, and a shallow
// copy of r, never r itself (the net/http Handler contract), with its own
// header without the credentials (Authorization, and with DPoP enabled
// DPoP) and with the handler's session id (sid, when the request
// named a session), the replayed body when the policy read it (body
// non-nil), and the request's state in its context.
func (v *Verifier) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, av *authValue, body []byte, sid string) (*sessionWriter, *http.Request) {
	ra := &requestAuth{Context: ctx, v: v, av: av}
	ra.w = sessionWriter{ResponseWriter: w, ra: ra}
	// The copy lives in ra, so that the request and its state are one
	// allocation (WithContext's own copy is inlined and does not escape).
	ra.req = *r.WithContext(ra)
	out := &ra.req
	out.Header = ra.header(r.Header, v.dpop != nil, sid)
	if body != nil {
		ra.body.Reset(body)
		out.Body = &ra.body
	}
	return &ra.w, out
}
