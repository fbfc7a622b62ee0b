package resource

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// JSON-RPC error codes used in 400 and 403 bodies.
const (
	codeHeaderMismatch = -32020 // MCP 2026-07-28 HeaderMismatch
	codeInvalidRequest = -32600
	codeParseError     = -32700
)

// response is what the middleware sends for a refused request.
type response struct {
	status     int
	challenges []oauthmeta.Challenge
	body       []byte
}

// errorResponse is the one place that turns an error into a response
// (RFC 6750 §3, RFC 9728 §5.1, MCP 2026-07-28 authorization "Error
// Handling"; RS-04…RS-07, RS-12, RS-16, RS-25):
//
//   - no credentials: 401, challenge without error (RS-06);
//   - bad, expired or foreign token: 401 error="invalid_token" (RS-07);
//   - malformed credentials: 400 error="invalid_request" (RS-16);
//   - missing scope: 403 error="insufficient_scope" with scope= listing
//     every scope the operation needs (RS-12);
//   - keys or introspection unavailable: 503, no detail;
//   - unusable JSON-RPC body or mismatched MCP headers: 400 (413 when too
//     large) with a JSON-RPC error, -32020 for a header mismatch;
//   - a disallowed Origin: 403 with a JSON-RPC error and no id (TR-01),
//     and a challenge without error or scope.
//
// Every challenge carries resource_metadata (RS-25); error descriptions
// are fixed texts, never request data.
func (v *Verifier) errorResponse(err error) response {
	cl := classOf(err)
	if cl == nil {
		cl = ErrUnavailable.(*class)
	}
	switch cl {
	case ErrNoToken:
		return response{status: cl.status, challenges: v.challenges("", "", v.policy.defaultScopes())}
	case ErrInvalidToken, ErrInvalidRequest:
		return response{status: cl.status, challenges: v.challenges(cl.code, description(err), v.policy.defaultScopes()),
			body: oauthBody(cl.code, description(err))}
	case ErrInsufficientScope:
		var se *ScopeError
		var scopes []string
		if errors.As(err, &se) {
			scopes = se.Required
		}
		return response{status: cl.status, challenges: v.challenges(cl.code, "the operation needs more scopes", scopes),
			body: oauthBody(cl.code, "")}
	case ErrBadMessage:
		status, code := http.StatusBadRequest, codeInvalidRequest
		switch {
		case errors.Is(err, ErrHeaderMismatch):
			code = codeHeaderMismatch
		case errors.Is(err, ErrMalformedBody):
			code = codeParseError
		case errors.Is(err, ErrBodyTooLarge):
			status = http.StatusRequestEntityTooLarge
		}
		return response{status: status, body: rpcErrorBody(code, description(err))}
	case ErrForbiddenOrigin:
		// RS-25: a plain challenge (no error, no scope) even here.
		return response{status: cl.status, challenges: v.challenges("", "", nil),
			body: rpcErrorBody(codeInvalidRequest, description(err))}
	default: // ErrUnavailable: no detail at all
		return response{status: http.StatusServiceUnavailable, body: oauthBody(oauthmeta.CodeTemporarilyUnavailable, "")}
	}
}

// challenges builds the WWW-Authenticate challenges: one per accepted
// scheme (today only Bearer). Scopes are never offline_access (RS-23,
// enforced when the policy is loaded).
func (v *Verifier) challenges(code oauthmeta.ErrorCode, desc string, scopes []string) []oauthmeta.Challenge {
	c := oauthmeta.Challenge{Scheme: schemeBearer}
	if code != "" {
		c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamError, Value: string(code)})
		if desc != "" {
			c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamErrorDescription, Value: desc})
		}
	}
	if len(scopes) > 0 {
		c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamScope, Value: oauthmeta.FormatScope(scopes)})
	}
	c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamResourceMetadata, Value: v.metadataURL})
	return []oauthmeta.Challenge{c}
}

// writeError sends the response for err.
func (v *Verifier) writeError(w http.ResponseWriter, err error) response {
	resp := v.errorResponse(err)
	h := w.Header()
	for _, c := range resp.challenges {
		h.Add("WWW-Authenticate", c.String())
	}
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate") // RS-26
	h.Set("Cache-Control", "no-store")
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
