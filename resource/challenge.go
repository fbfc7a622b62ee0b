package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// JSON-RPC error codes used in 400 and 403 bodies.
const (
	codeHeaderMismatch = -32020 // MCP 2026-07-28 HeaderMismatch
	codeRateLimited    = -32000 // JSON-RPC implementation-defined server error
	codeInvalidRequest = -32600
	codeParseError     = -32700
)

// response is what the middleware sends for a refused request.
type response struct {
	status     int
	challenges []oauthmeta.Challenge
	body       []byte
	nonce      bool // add a fresh DPoP-Nonce header (RFC 9449 §9)
	retryAfter int  // seconds, for a 429
}

// errorResponse is the one place that turns an error into a response
// (RFC 6750 §3, RFC 9728 §5.1, MCP 2026-07-28 authorization "Error
// Handling"):
//
//   - no credentials: 401, challenge without error;
//   - bad, expired or foreign token: 401 error="invalid_token";
//   - malformed credentials: 400 error="invalid_request";
//   - missing scope: 403 error="insufficient_scope" with scope= listing
//     every scope the operation needs;
//   - keys or introspection unavailable: 503, no detail;
//   - unusable JSON-RPC body or mismatched MCP headers: 400 (413 when too
//     large) with a JSON-RPC error, -32020 for a header mismatch;
//   - a rate-limited identity ([RateLimit]): 429 with Retry-After and a
//     JSON-RPC error -32000 whose data.retryAfter repeats the wait;
//   - a disallowed Origin: 403 with a JSON-RPC error and no id,
//     and a challenge without error or scope;
//   - with DPoP (RFC 9449 §7): a bad proof 401 error="invalid_dpop_proof",
//     a missing or stale server nonce 401 error="use_dpop_nonce" with a
//     fresh DPoP-Nonce, a token bound to another key (or none) 401
//     invalid_token.
//
// With DPoP allowed, every 401 offers both schemes (a DPoP challenge with
// algs= beside the Bearer one) and the error goes on the challenge of the
// scheme the request used, or on both when that is ambiguous (RFC 9449
// §7.2); a 403 names only the scheme used. With DPoP required, only the
// DPoP challenge is offered. Every challenge carries resource_metadata;
// error descriptions are fixed texts, never request data.
func (v *Verifier) errorResponse(err error, scheme string) response {
	cl := classOf(err)
	if cl == nil {
		cl = ErrUnavailable.(*class)
	}
	switch cl {
	case ErrNoToken:
		return v.unauthorized(cl.status, v.challenges("", "", v.policy.defaultScopes(), scheme, false), nil)
	case ErrInvalidToken, ErrInvalidRequest, ErrInvalidDPoPProof, ErrUseDPoPNonce:
		return v.unauthorized(cl.status, v.challenges(cl.code, description(err), v.policy.defaultScopes(), scheme, false),
			oauthBody(cl.code, description(err)))
	case ErrInsufficientScope:
		var se *ScopeError
		var scopes []string
		if errors.As(err, &se) {
			scopes = se.Required
		}
		return response{status: cl.status, challenges: v.challenges(cl.code, "the operation needs more scopes", scopes, scheme, true),
			body: oauthBody(cl.code, "")}
	case ErrBadMessage:
		status, code := http.StatusBadRequest, codeInvalidRequest
		switch {
		case errors.Is(err, errHeaderMismatch):
			code = codeHeaderMismatch
		case errors.Is(err, errMalformedBody):
			code = codeParseError
		case errors.Is(err, errBodyTooLarge):
			status = http.StatusRequestEntityTooLarge
		}
		return response{status: status, body: rpcErrorBody(code, description(err))}
	case ErrForbiddenOrigin:
		// a plain challenge (no error, no scope) even here.
		return response{status: cl.status, challenges: v.challenges("", "", nil, "", false),
			body: rpcErrorBody(codeInvalidRequest, description(err))}
	case ErrRateLimited:
		secs := 1
		if rle := (*RateLimitError)(nil); errors.As(err, &rle) {
			secs = max(1, int(math.Ceil(rle.RetryAfter.Seconds())))
		}
		return response{status: cl.status, retryAfter: secs, body: rateLimitBody(secs)}
	case ErrDelegation:
		return response{status: cl.status, body: rpcErrorBody(codeInvalidRequest, description(err))}
	case ErrUnknownSession:
		// The body says no more than the MCP handler would.
		return response{status: cl.status, body: rpcErrorBody(codeInvalidRequest, "session not found")}
	default: // ErrUnavailable: no detail at all
		return response{status: http.StatusServiceUnavailable, body: oauthBody(oauthmeta.CodeTemporarilyUnavailable, "")}
	}
}

// unauthorized is a 401 (or 400) response; with DPoP nonces configured, a
// 401 carries a fresh nonce, so the client's next proof can include it
// without another round trip (RFC 9449 §9).
func (v *Verifier) unauthorized(status int, chs []oauthmeta.Challenge, body []byte) response {
	nonce := v.dpop != nil && v.dpop.nonces && status == http.StatusUnauthorized
	return response{status: status, challenges: chs, body: body, nonce: nonce}
}

// challenges builds the WWW-Authenticate challenges: one per accepted
// scheme, Bearer (unless DPoP is required), then DPoP (when enabled, with
// algs=). The error goes on the challenge of scheme, on every challenge
// when scheme is "" (no scheme, or an ambiguous request), and always on
// a lone challenge; with onlyScheme, the other scheme's challenge is left
// out. Scopes are never offline_access (enforced when the policy is
// loaded).
func (v *Verifier) challenges(code oauthmeta.ErrorCode, desc string, scopes []string, scheme string, onlyScheme bool) []oauthmeta.Challenge {
	bearer := v.dpop == nil || v.dpop.mode == DPoPAllowed
	withDPoP := v.dpop != nil
	if onlyScheme && bearer && withDPoP {
		bearer, withDPoP = scheme != schemeDPoP, scheme == schemeDPoP
	}
	lone := !(bearer && withDPoP)
	var extra []oauthmeta.Param
	if len(scopes) > 0 {
		extra = append(extra, oauthmeta.Param{Name: oauthmeta.ParamScope, Value: oauthmeta.FormatScope(scopes)})
	}
	extra = append(extra, oauthmeta.Param{Name: oauthmeta.ParamResourceMetadata, Value: v.metadataURL})
	out := make([]oauthmeta.Challenge, 0, 2)
	// Both challenges have the layout dpop.Challenge builds (error,
	// error_description, then extra); only DPoP's adds algs.
	add := func(s string, algs []string) {
		var e error
		if code != "" && (lone || scheme == "" || scheme == s) {
			e = &oauthmeta.Error{Code: code, Description: desc}
		}
		c := dpop.Challenge(algs, e, extra...)
		c.Scheme = s
		out = append(out, c)
	}
	if bearer {
		add(schemeBearer, nil)
	}
	if withDPoP {
		add(schemeDPoP, v.dpop.algs)
	}
	return out
}

// writeError sends the response for err, which concerns a request made
// with scheme ("" when none or ambiguous).
func (v *Verifier) writeError(w http.ResponseWriter, r *http.Request, err error, scheme string) response {
	resp := v.errorResponse(err, scheme)
	h := w.Header()
	if resp.nonce {
		n, nerr := v.dpop.verifier.Nonce(r.Context())
		switch {
		case nerr == nil:
			h.Set(dpopNonceHeader, n)
		case classOf(err) == ErrUseDPoPNonce:
			// The client cannot succeed without a nonce: a server condition.
			resp = v.errorResponse(errors.Join(errDPoPNonceUnavailable, nerr), scheme)
		}
	}
	for _, c := range resp.challenges {
		h.Add("WWW-Authenticate", c.String())
	}
	h.Set("Access-Control-Expose-Headers", v.exposeHdrs) // RFC 9449 §8
	h.Set("Cache-Control", "no-store")
	if resp.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(resp.retryAfter))
	}
	if resp.body != nil {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
	return resp
}

func oauthBody(code oauthmeta.ErrorCode, desc string) []byte {
	b, _ := json.Marshal(&oauthmeta.Error{Code: code, Description: desc})
	return b
}

func rpcErrorBody(code int, msg string) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		Error   rpcError `json:"error"`
	}{"2.0", rpcError{code, msg}})
	return b
}

// rateLimitBody is the JSON-RPC error of a 429: code -32000 with the
// wait in data.retryAfter (seconds), as Retry-After says.
func rateLimitBody(secs int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","error":{"code":%d,"message":"rate limit exceeded","data":{"retryAfter":%d}}}`, codeRateLimited, secs)
}

// DenyExchange answers r, a request the middleware verified, whose
// [Exchanger.Exchange] failed with err, with the status of
// [ExchangeStatus], which it returns. A 401 carries the challenge of any
// other token refusal (RFC 6750 §3, error="invalid_token", with
// resource_metadata, and DPoP's when enabled) so that the MCP client
// obtains a new token; a 503 or 502 carries an RFC 6749 error body and no
// challenge. The answer never contains the token, the authorization
// server's error text or err.
func (v *Verifier) DenyExchange(w http.ResponseWriter, r *http.Request, err error) int {
	scheme := ""
	if ra, ok := r.Context().Value(ctxKey{}).(*requestAuth); ok && ra.av != nil && ra.av.info != nil {
		scheme = ra.av.info.Scheme
	}
	switch ExchangeStatus(err) {
	case http.StatusUnauthorized:
		if errors.Is(err, ErrNoToken) {
			return v.writeError(w, r, ErrNoToken, scheme).status
		}
		return v.writeError(w, r, errExchangeGrant, scheme).status
	case http.StatusServiceUnavailable:
		return v.writeError(w, r, errExchangeUnavailable, scheme).status
	case http.StatusForbidden:
		if errors.Is(err, ErrConnectRequired) {
			h := w.Header()
			h.Set("Cache-Control", "no-store")
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write(oauthBody(oauthmeta.CodeAccessDenied, "the user has not connected the account this needs"))
			return http.StatusForbidden
		}
		return v.writeError(w, r, err, scheme).status // the challenge names the ScopeError's scopes
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write(oauthBody(oauthmeta.CodeServerError, "token exchange failed"))
	return http.StatusBadGateway
}
