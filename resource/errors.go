package resource

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// class is an error class: it fixes the HTTP status, and the OAuth error
// code of the challenge, of every reason that belongs to it. A class
// matches *oauthmeta.Error values with the same code under errors.Is.
type class struct {
	msg    string
	status int
	code   oauthmeta.ErrorCode
}

func (c *class) Error() string { return c.msg }

// Is matches an *oauthmeta.Error with the class's code.
func (c *class) Is(target error) bool {
	var oe *oauthmeta.Error
	return c.code != "" && errors.As(target, &oe) && oe.Code == c.code
}

// Error is a refusal with its specific reason. It unwraps to one of the
// error classes (ErrNoToken, ErrInvalidToken, ErrInvalidRequest,
// ErrInvalidDPoPProof, ...), which fix the response status and OAuth error
// code and are what callers branch on with errors.Is; errors.As to *Error
// gives the reason.
type Error struct {
	// Reason is the fixed description of the failure, such as "token
	// expired" or "DPoP proof replayed": the challenge's
	// error_description and the audit Event.Reason. It never contains
	// request data.
	Reason string

	msg   string
	class *class
	dpop  bool // a DPoP (RFC 9449) outcome, reported in Event.DPoP
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the error's class.
func (e *Error) Unwrap() error { return e.class }

func newReason(cl *class, desc string) *Error {
	return &Error{msg: "resource: " + desc, Reason: desc, class: cl}
}

func newDPoPReason(cl *class, desc string) *Error {
	r := newReason(cl, desc)
	r.dpop = true
	return r
}

// Error classes. Every error Verify or the middleware produces matches
// exactly one of them with errors.Is; each fixes the response status.
var (
	// ErrNoToken: the request carried no credentials (401 with a challenge
	// that has no error attribute, RFC 6750 §3.1).
	ErrNoToken error = &class{msg: "resource: no access token", status: http.StatusUnauthorized}
	// ErrInvalidToken: the token is malformed, expired, not for this
	// resource, from an unknown issuer, badly signed or inactive
	// (401 error="invalid_token").
	ErrInvalidToken error = &class{msg: "resource: invalid token", status: http.StatusUnauthorized, code: oauthmeta.CodeInvalidToken}
	// ErrInvalidRequest: the credentials were presented in a malformed way
	// (400 error="invalid_request").
	ErrInvalidRequest error = &class{msg: "resource: invalid request", status: http.StatusBadRequest, code: oauthmeta.CodeInvalidRequest}
	// ErrInsufficientScope: the token lacks a scope the operation needs
	// (403 error="insufficient_scope"); the error is a [*ScopeError].
	ErrInsufficientScope error = &class{msg: "resource: insufficient scope", status: http.StatusForbidden, code: oauthmeta.CodeInsufficientScope}
	// ErrUnavailable: keys or the introspection endpoint could not be
	// reached, so nothing can be verified (503, no detail).
	ErrUnavailable error = &class{msg: "resource: verification unavailable", status: http.StatusServiceUnavailable}
	// ErrBadMessage: the JSON-RPC body or the MCP headers are unusable
	// (400 with a JSON-RPC error; 413 for an oversized body).
	ErrBadMessage error = &class{msg: "resource: bad MCP message", status: http.StatusBadRequest}
	// ErrForbiddenOrigin: a present Origin is not allowed (403).
	ErrForbiddenOrigin error = &class{msg: "resource: origin not allowed", status: http.StatusForbidden}
	// ErrInvalidDPoPProof: the DPoP proof of a request with the DPoP scheme
	// is missing, malformed, replayed or made for another request (401 with
	// a DPoP challenge error="invalid_dpop_proof", RFC 9449 §7.1).
	ErrInvalidDPoPProof error = &class{msg: "resource: invalid DPoP proof", status: http.StatusUnauthorized, code: oauthmeta.CodeInvalidDPoPProof}
	// ErrUseDPoPNonce: the DPoP proof lacks a nonce this server accepts
	// (401 with a DPoP challenge error="use_dpop_nonce" and a fresh
	// DPoP-Nonce header, RFC 9449 §9).
	ErrUseDPoPNonce error = &class{msg: "resource: DPoP nonce required", status: http.StatusUnauthorized, code: oauthmeta.CodeUseDPoPNonce}
	// ErrUnknownSession: the request's Mcp-Session-Id was not issued to
	// the token's user (another user's session, or no session at all):
	// 404, as the MCP handler answers for an unknown session, so that a
	// session's existence is not revealed.
	ErrUnknownSession error = &class{msg: "resource: unknown session", status: http.StatusNotFound}
	// ErrDelegation: the token's actor chain (RFC 8693 "act") is not
	// what the policy's [DelegationRule] for the operation allows (403,
	// a JSON-RPC error, no challenge: another token of the same client
	// would not help).
	ErrDelegation error = &class{msg: "resource: delegation not allowed", status: http.StatusForbidden}
)

// Reasons for ErrDelegation.
var (
	errDelegationForbidden error = newReason(ErrDelegation.(*class), "delegated tokens may not call this operation")
	errDelegationRequired  error = newReason(ErrDelegation.(*class), "only delegated tokens may call this operation")
	errActorNotAllowed     error = newReason(ErrDelegation.(*class), "actor not allowed for this operation")
	errDelegationTooDeep   error = newReason(ErrDelegation.(*class), "delegation chain too long for this operation")
)

// refusal returns err, a failed check of package dpop or of the JWT rules,
// joined with the *Error that refuses the request: of the class named by
// the OAuth error code err carries (cl when it carries none, or one no
// class has), with err's description as the Reason. The sentinels of
// those packages are the reasons: errors.Is(err, dpop.ErrReplayedProof).
func refusal(cl error, err error, dpop bool) error {
	c, desc := cl.(*class), ""
	var oe *oauthmeta.Error
	if errors.As(err, &oe) {
		desc = oe.Description
		for _, k := range codeClasses {
			if k.code == oe.Code {
				c = k
			}
		}
		if oe.Code == oauthmeta.CodeTemporarilyUnavailable {
			c = ErrUnavailable.(*class)
		}
	}
	if desc == "" {
		desc = err.Error()
		if _, after, ok := strings.Cut(desc, ": "); ok {
			desc = after // the package prefix
		}
	}
	r := newReason(c, desc)
	r.dpop = dpop
	return errors.Join(r, err)
}

// codeClasses are the classes a refusal from another package may name
// through its OAuth error code.
var codeClasses = []*class{ErrInvalidToken.(*class), ErrInvalidDPoPProof.(*class), ErrUseDPoPNonce.(*class)}

func classOf(err error) *class {
	for _, c := range []error{ErrNoToken, ErrInvalidToken, ErrInvalidRequest, ErrInsufficientScope, ErrUnavailable, ErrBadMessage,
		ErrForbiddenOrigin, ErrInvalidDPoPProof, ErrUseDPoPNonce, ErrUnknownSession, ErrDelegation, ErrRateLimited} {
		if errors.Is(err, c) {
			return c.(*class)
		}
	}
	return nil
}

// ErrUnknownKey (class ErrInvalidToken) refuses a token when no key of
// its issuer may have signed it: a keyset.Source reported
// keyset.ErrUnknownKey, or none of the keys it returned fits the token's
// "kid" and "alg". The other reasons are told apart through
// [Error.Reason].
var ErrUnknownKey error = errUnknownKey

// Reasons for ErrInvalidToken.
var (
	errUnknownKey       error = newReason(ErrInvalidToken.(*class), "signing key is unknown")
	errMalformedToken   error = newReason(ErrInvalidToken.(*class), "token is malformed")
	errTokenTooLarge    error = newReason(ErrInvalidToken.(*class), "token is too large")
	errAlgorithm        error = newReason(ErrInvalidToken.(*class), "signing algorithm not accepted")
	errTokenType        error = newReason(ErrInvalidToken.(*class), "token type not accepted")
	errSignature        error = newReason(ErrInvalidToken.(*class), "signature is invalid")
	errIssuer           error = newReason(ErrInvalidToken.(*class), "issuer not accepted")
	errAudience         error = newReason(ErrInvalidToken.(*class), "token is not for this resource")
	errRequiredClaim    error = newReason(ErrInvalidToken.(*class), "required claim missing or different")
	errTenant           error = newReason(ErrInvalidToken.(*class), "tenant not accepted")
	errNoClient         error = newReason(ErrInvalidToken.(*class), "token names no client")
	errClient           error = newReason(ErrInvalidToken.(*class), "client not accepted")
	errBoundToken       error = newDPoPReason(ErrInvalidToken.(*class), "sender-constrained token presented as bearer")
	errInactive         error = newReason(ErrInvalidToken.(*class), "token is not active")
	errUnsupportedToken error = newReason(ErrInvalidToken.(*class), "token format not supported")
	errMalformedActor   error = newReason(ErrInvalidToken.(*class), "act claim is malformed")
)

// Reasons for DPoP failures (RFC 9449 §4.3, §7), grouped by class.
var (
	// Class ErrInvalidToken (401 invalid_token): the token presented with
	// the DPoP scheme is not DPoP-bound (no "cnf" with "jkt"), or it is
	// bound to another key than the proof's (RFC 9449 §7.1), or the Bearer
	// scheme was used where DPoP is required.
	errDPoPUnboundToken error = newDPoPReason(ErrInvalidToken.(*class), "token is not DPoP-bound")
	errDPoPRequired     error = newDPoPReason(ErrInvalidToken.(*class), "a DPoP-bound token and proof are required")

	// Class ErrInvalidDPoPProof (401 invalid_dpop_proof, RFC 9449 §4.3).

	// Class ErrUseDPoPNonce (401 use_dpop_nonce with DPoP-Nonce, §9).

	// Class ErrUnavailable (503): the replay store is full or failing, so
	// no proof can be accepted.
	// The nonce source failed while a nonce was
	// needed (503).
	errDPoPNonceUnavailable error = newDPoPReason(ErrUnavailable.(*class), "DPoP nonce unavailable")
)

// Reasons for ErrInvalidRequest.
var (
	errMultipleCredentials  error = newReason(ErrInvalidRequest.(*class), "more than one credential in the request")
	errMalformedCredentials error = newReason(ErrInvalidRequest.(*class), "malformed Authorization header")
	errTokenInQuery         error = newReason(ErrInvalidRequest.(*class), "access token in the query string")
	errTokenInBody          error = newReason(ErrInvalidRequest.(*class), "form-encoded request body")
)

// Reasons for ErrUnavailable.
var (
	errKeysUnavailable   error = newReason(ErrUnavailable.(*class), "signing keys unavailable")
	errIntrospection     error = newReason(ErrUnavailable.(*class), "introspection failed")
	errRateLimitStore    error = newReason(ErrUnavailable.(*class), "rate limit store unavailable")
	errVerifierClosed    error = newReason(ErrUnavailable.(*class), "verifier closed")
	errIntrospectionBusy error = newReason(ErrUnavailable.(*class), "too many introspection calls in flight")
)

// Reasons for ErrBadMessage, each with its JSON-RPC error code.
var (
	errHeaderMismatch error = newReason(ErrBadMessage.(*class), "Mcp-Method or Mcp-Name header does not match the body")
	errBatch          error = newReason(ErrBadMessage.(*class), "JSON-RPC batches are not supported")
	errMalformedBody  error = newReason(ErrBadMessage.(*class), "body is not one JSON-RPC message")
	errBodyTooLarge   error = newReason(ErrBadMessage.(*class), "body too large")
)

// Reasons for ErrUnknownSession.
var (
	errSessionNotBound error = newReason(ErrUnknownSession.(*class), "session ID not issued to this user")
	errSessionMultiple error = newReason(ErrUnknownSession.(*class), "more than one session ID")
)

// The reason for ErrForbiddenOrigin.
var errOriginNotAllowed error = newReason(ErrForbiddenOrigin.(*class), "origin not allowed")

// ErrTokenPassthrough matches every [*PassthroughError].
var ErrTokenPassthrough = errors.New("resource: inbound access token in an outbound request")

// ErrInvalidConfig wraps every configuration error New and the other
// constructors return.
var ErrInvalidConfig = errors.New("resource: invalid configuration")

// ScopeError reports the scopes an operation needs when the token lacks
// one of them. It matches [ErrInsufficientScope].
type ScopeError struct {
	// Required lists every scope the operation needs (not only the
	// missing ones), the value of the challenge's scope parameter.
	Required []string
	// Missing lists the required scopes the token does not grant, even
	// after expanding the policy's implied scopes.
	Missing []string
}

func (e *ScopeError) Error() string {
	return "resource: insufficient scope: needs " + strings.Join(e.Required, " ")
}

// Unwrap returns ErrInsufficientScope.
func (e *ScopeError) Unwrap() error { return ErrInsufficientScope }

// PassthroughError is returned by the transport of [Verifier.GuardTransport]
// when an outbound request carries the inbound access token. Where names
// the place ("header Authorization", "query parameter access_token",
// "URL"), never the value. It matches [ErrTokenPassthrough].
type PassthroughError struct {
	Where string
}

func (e *PassthroughError) Error() string {
	return "resource: refused to send the inbound access token upstream (" + e.Where + ")"
}

// Is matches ErrTokenPassthrough.
func (e *PassthroughError) Is(target error) bool { return target == ErrTokenPassthrough }

// description returns the fixed error_description of err, or "".
func description(err error) string {
	var r *Error
	if errors.As(err, &r) {
		return r.Reason
	}
	if rl := (*RateLimitError)(nil); errors.As(err, &rl) {
		return "rate limit exceeded"
	}
	return ""
}
