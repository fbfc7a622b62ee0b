package resource

import (
	"errors"
	"net/http"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Reasons of a failed token exchange, as [Verifier.DenyExchange] answers
// them.
var (
	// The authorization server refused the request's token for the
	// exchange (invalid_grant): the token, or its grant, was revoked or
	// has expired, or the grant holds no upstream token. The user must
	// log in again, which a 401 invalid_token makes an MCP client do.
	errExchangeGrant error = newReason(ErrInvalidToken.(*class), "the upstream token is unavailable; log in again")
	// The authorization server could not be reached in time (503).
	errExchangeUnavailable error = newReason(ErrUnavailable.(*class), "token exchange unavailable")
)

// ExchangeStatus is the HTTP status that answers a request whose
// [Exchanger.Exchange] failed with err:
//
//   - 401 when the authorization server refused the request's token
//     (invalid_grant: revoked, expired, issued for another resource, or
//     a grant without upstream tokens), or the request was not verified;
//   - 403 when [Exchanger.ExchangeResource] asked for scopes the
//     request's token lacks (a [*ScopeError]): the answer is an
//     insufficient_scope challenge naming them, for a step-up;
//   - 503 when it could not be reached or answer in time, or said
//     temporarily_unavailable ([ErrExchangeUnavailable]);
//   - 502 for every other failure (a refusal of this server's client
//     credentials or of the audience, a malformed answer): a
//     configuration fault the user cannot mend.
//
// It is 200 for a nil err.
func ExchangeStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrInsufficientScope):
		return http.StatusForbidden
	case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}), errors.Is(err, ErrNoToken):
		return http.StatusUnauthorized
	case errors.Is(err, ErrExchangeUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
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
	switch status := ExchangeStatus(err); status {
	case http.StatusUnauthorized:
		if errors.Is(err, ErrNoToken) {
			return v.writeError(w, r, ErrNoToken, scheme).status
		}
		return v.writeError(w, r, errExchangeGrant, scheme).status
	case http.StatusServiceUnavailable:
		return v.writeError(w, r, errExchangeUnavailable, scheme).status
	case http.StatusForbidden:
		return v.writeError(w, r, err, scheme).status // the challenge names the ScopeError's scopes
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write(oauthBody(oauthmeta.CodeServerError, "token exchange failed"))
	return http.StatusBadGateway
}
