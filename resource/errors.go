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

// reason is one specific failure; it unwraps to its class.
type reason struct {
	msg   string
	desc  string // error_description, fixed text, never request data
	class *class
	dpop  bool // a DPoP (RFC 9449) outcome, reported in Event.DPoP
}

func (r *reason) Error() string { return r.msg }
func (r *reason) Unwrap() error { return r.class }

func newReason(cl *class, desc string) *reason {
	return &reason{msg: "resource: " + desc, desc: desc, class: cl}
}

func newDPoPReason(cl *class, desc string) *reason {
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
	// ErrForbiddenOrigin: a present Origin is not allowed (403, TR-01).
	ErrForbiddenOrigin error = &class{msg: "resource: origin not allowed", status: http.StatusForbidden}
	// ErrInvalidDPoPProof: the DPoP proof of a request with the DPoP scheme
	// is missing, malformed, replayed or made for another request (401 with
	// a DPoP challenge error="invalid_dpop_proof", RFC 9449 §7.1).
	ErrInvalidDPoPProof error = &class{msg: "resource: invalid DPoP proof", status: http.StatusUnauthorized, code: oauthmeta.CodeInvalidDPoPProof}
	// ErrUseDPoPNonce: the DPoP proof lacks a nonce this server accepts
	// (401 with a DPoP challenge error="use_dpop_nonce" and a fresh
	// DPoP-Nonce header, RFC 9449 §9).
	ErrUseDPoPNonce error = &class{msg: "resource: DPoP nonce required", status: http.StatusUnauthorized, code: oauthmeta.CodeUseDPoPNonce}
)

func classOf(err error) *class {
	for _, c := range []error{ErrNoToken, ErrInvalidToken, ErrInvalidRequest, ErrInsufficientScope, ErrUnavailable, ErrBadMessage,
		ErrForbiddenOrigin, ErrInvalidDPoPProof, ErrUseDPoPNonce} {
		if errors.Is(err, c) {
			return c.(*class)
		}
	}
	return nil
}

// Reasons for ErrInvalidToken.
var (
	ErrMalformedToken   error = newReason(ErrInvalidToken.(*class), "token is malformed")
	ErrTokenTooLarge    error = newReason(ErrInvalidToken.(*class), "token is too large")
	ErrAlgorithm        error = newReason(ErrInvalidToken.(*class), "signing algorithm not accepted")
	ErrTokenType        error = newReason(ErrInvalidToken.(*class), "token type is not at+jwt")
	ErrSignature        error = newReason(ErrInvalidToken.(*class), "signature is invalid")
	ErrUnknownKey       error = newReason(ErrInvalidToken.(*class), "signing key is unknown")
	ErrIssuer           error = newReason(ErrInvalidToken.(*class), "issuer not accepted")
	ErrAudience         error = newReason(ErrInvalidToken.(*class), "token is not for this resource")
	ErrExpired          error = newReason(ErrInvalidToken.(*class), "token expired")
	ErrMissingExpiry    error = newReason(ErrInvalidToken.(*class), "token has no expiry")
	ErrNotYetValid      error = newReason(ErrInvalidToken.(*class), "token not yet valid")
	ErrIssuedInFuture   error = newReason(ErrInvalidToken.(*class), "token issued in the future")
	ErrBoundToken       error = newDPoPReason(ErrInvalidToken.(*class), "sender-constrained token presented as bearer")
	ErrInactive         error = newReason(ErrInvalidToken.(*class), "token is not active")
	ErrUnsupportedToken error = newReason(ErrInvalidToken.(*class), "token format not supported")
)

// Reasons for DPoP failures (RFC 9449 §4.3, §7), grouped by class.
var (
	// Class ErrInvalidToken (401 invalid_token): the token presented with
	// the DPoP scheme is not DPoP-bound (no "cnf" with "jkt"), or it is
	// bound to another key than the proof's (RFC 9449 §7.1), or the Bearer
	// scheme was used where DPoP is required.
	ErrDPoPUnboundToken error = newDPoPReason(ErrInvalidToken.(*class), "token is not DPoP-bound")
	ErrDPoPKeyMismatch  error = newDPoPReason(ErrInvalidToken.(*class), "token is bound to another key")
	ErrDPoPRequired     error = newDPoPReason(ErrInvalidToken.(*class), "a DPoP-bound token and proof are required")

	// Class ErrInvalidDPoPProof (401 invalid_dpop_proof, RFC 9449 §4.3).
	ErrDPoPProofMissing    error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof missing")
	ErrDPoPMultipleProofs  error = newDPoPReason(ErrInvalidDPoPProof.(*class), "more than one DPoP proof")
	ErrDPoPMalformed       error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof is malformed")
	ErrDPoPAlgorithm       error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof algorithm not accepted")
	ErrDPoPSignature       error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof signature is invalid")
	ErrDPoPRequestMismatch error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof is for another method or URL")
	ErrDPoPProofTime       error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof is too old or issued in the future")
	ErrDPoPTokenHash       error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof is for another access token")
	// ErrDPoPReplayed is also what a [DPoPReplayStore] returns (or wraps)
	// for a key it has seen.
	ErrDPoPReplayed error = newDPoPReason(ErrInvalidDPoPProof.(*class), "DPoP proof replayed")

	// Class ErrUseDPoPNonce (401 use_dpop_nonce with DPoP-Nonce, §9).
	ErrDPoPNonceRequired error = newDPoPReason(ErrUseDPoPNonce.(*class), "resource server requires a nonce in the DPoP proof")
	ErrDPoPNonceInvalid  error = newDPoPReason(ErrUseDPoPNonce.(*class), "DPoP nonce invalid or expired")

	// Class ErrUnavailable (503): the replay store is full or failing, so
	// no proof can be accepted.
	ErrDPoPReplayUnavailable error = newDPoPReason(ErrUnavailable.(*class), "DPoP replay check unavailable")
	// ErrDPoPNonceUnavailable: the nonce source failed while a nonce was
	// needed (503).
	ErrDPoPNonceUnavailable error = newDPoPReason(ErrUnavailable.(*class), "DPoP nonce unavailable")
)

// Reasons for ErrInvalidRequest.
var (
	ErrMultipleCredentials  error = newReason(ErrInvalidRequest.(*class), "more than one credential in the request")
	ErrMalformedCredentials error = newReason(ErrInvalidRequest.(*class), "malformed Authorization header")
	ErrTokenInQuery         error = newReason(ErrInvalidRequest.(*class), "access token in the query string")
	ErrTokenInBody          error = newReason(ErrInvalidRequest.(*class), "form-encoded request body")
)

// Reasons for ErrUnavailable.
var (
	ErrKeysUnavailable   error = newReason(ErrUnavailable.(*class), "signing keys unavailable")
	ErrIntrospection     error = newReason(ErrUnavailable.(*class), "introspection failed")
	ErrVerifierClosed    error = newReason(ErrUnavailable.(*class), "verifier closed")
	errIntrospectionBusy error = newReason(ErrUnavailable.(*class), "too many introspection calls in flight")
)

// Reasons for ErrBadMessage, each with its JSON-RPC error code.
var (
	ErrHeaderMismatch error = newReason(ErrBadMessage.(*class), "Mcp-Method or Mcp-Name header does not match the body")
	ErrBatch          error = newReason(ErrBadMessage.(*class), "JSON-RPC batches are not supported")
	ErrMalformedBody  error = newReason(ErrBadMessage.(*class), "body is not one JSON-RPC message")
	ErrBodyTooLarge   error = newReason(ErrBadMessage.(*class), "body too large")
)

// ErrOriginNotAllowed is the reason for ErrForbiddenOrigin.
var ErrOriginNotAllowed error = newReason(ErrForbiddenOrigin.(*class), "origin not allowed")

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
	var r *reason
	if errors.As(err, &r) {
		return r.desc
	}
	return ""
}
