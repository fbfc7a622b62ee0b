package jwtassert

import (
	"errors"
	"strings"

	"github.com/mcpauth/mcpauth/internal/checkerr"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Sentinel errors, one per failed check. Every error returned by
// [ClientAssertionVerifier.Verify] and [GrantVerifier.Verify] wraps exactly
// one sentinel (errors.Is): one of these, one of jwtverify's (the shape,
// algorithm, time and signature checks are jwtverify's) or
// replay.ErrReplayed. It also wraps an [*oauthmeta.Error] (errors.As, or
// [OAuthError]) whose code is invalid_client for client assertions (RFC
// 7523 §3.2, RFC 6749 §5.2; answer 401) and invalid_grant for
// authorization grants (RFC 7523 §3.1; answer 400), except
// jwtverify.ErrKeysUnavailable and ErrReplayCheckUnavailable, which are
// temporarily_unavailable (answer 503). Descriptions name the failed
// check, never a claim value or the JWT.
var (
	// ErrTooLarge: the JWT is longer than the configured MaxSize.
	ErrTooLarge = errors.New("jwtassert: JWT too large")
	// ErrWrongType: the "typ" header does not fit the kind of JWT expected
	// (RFC 8725 §3.11): a client assertion typed as something else, an
	// authorization grant without the profile's type.
	ErrWrongType = errors.New("jwtassert: wrong JWT type")
	// ErrMissingClaim: a required claim is absent or empty.
	ErrMissingClaim = errors.New("jwtassert: missing claim")
	// ErrIssuerMismatch: a client assertion's "iss" is not the client_id
	// (RFC 7523 §3 item 1).
	ErrIssuerMismatch = errors.New("jwtassert: iss is not the client_id")
	// ErrSubjectMismatch: a client assertion's "sub" is not the client_id
	// (RFC 7523 §3 item 2.B).
	ErrSubjectMismatch = errors.New("jwtassert: sub is not the client_id")
	// ErrUnknownIssuer: an authorization grant from an issuer this server
	// does not trust (RFC 7523 §3 item 1).
	ErrUnknownIssuer = errors.New("jwtassert: untrusted issuer")
	// ErrAudience: "aud" names none of the accepted audiences (RFC 7523 §3
	// item 3, draft-ietf-oauth-rfc7523bis).
	ErrAudience = errors.New("jwtassert: audience not accepted")
	// ErrClientIDMismatch: an authorization grant's "client_id" is not the
	// client that presents it (draft-ietf-oauth-identity-assertion-authz-grant
	// §4.4.1).
	ErrClientIDMismatch = errors.New("jwtassert: client_id does not match the authenticated client")
	// ErrReplayCheckUnavailable: the replay store could not record the jti
	// (full or failing); the JWT is refused. Code temporarily_unavailable.
	ErrReplayCheckUnavailable = errors.New("jwtassert: replay check unavailable")
)

// fail builds the error of a failed check for a JWT whose failures map to
// code. detail must be a constant string.
func fail(sentinel error, code oauthmeta.ErrorCode, detail string) error {
	if sentinel == jwtverify.ErrKeysUnavailable || sentinel == ErrReplayCheckUnavailable {
		code = oauthmeta.CodeTemporarilyUnavailable
	}
	prefix, _, _ := strings.Cut(sentinel.Error(), ": ") // "jwtassert", "jwtverify", "replay"
	return checkerr.New(sentinel, code, prefix+": ", detail)
}

// OAuthError returns the OAuth error for err: the *oauthmeta.Error it wraps,
// or, for an error from outside this package, invalid_request without a
// description. It returns nil for a nil err.
func OAuthError(err error) *oauthmeta.Error {
	return checkerr.OAuth(err, oauthmeta.CodeInvalidRequest)
}
