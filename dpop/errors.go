package dpop

import (
	"errors"

	"github.com/mcpauth/mcpauth/internal/checkerr"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Sentinel errors, one per kind of failed check. Every error returned by
// [Verifier.Verify], [ProofFromHeader] and [Proof.CheckBinding] wraps exactly
// one of them (test with errors.Is; a finer reason, such as a missing claim
// under ErrMalformedProof, is in the message) and also an [*oauthmeta.Error] carrying
// the RFC 9449 §7.1 / §12.2 error code and a description that never contains
// the proof, the token or any other request value (use errors.As, or
// [OAuthError]).
//
// The code is invalid_dpop_proof unless stated otherwise.
var (
	// ErrMissingProof: the request carries no DPoP proof.
	ErrMissingProof = errors.New("dpop: missing DPoP proof")
	// ErrMultipleProofs: more than one DPoP header field, or a list of values
	// (RFC 9449 §4.3 check 1).
	ErrMultipleProofs = errors.New("dpop: more than one DPoP proof")
	// errProofTooLarge (ErrMalformedProof): the proof is longer than VerifierConfig.MaxProofSize.
	errProofTooLarge = &reason{"dpop: proof too large", ErrMalformedProof}
	// ErrMalformedProof: not a JWS in compact serialization with base64url
	// segments and JSON objects as header and payload (§4.3 check 2).
	ErrMalformedProof = errors.New("dpop: malformed proof")
	// errWrongType (ErrMalformedProof): the "typ" header is not dpop+jwt (§4.3 check 4).
	errWrongType = &reason{"dpop: typ is not dpop+jwt", ErrMalformedProof}
	// ErrAlgNotAllowed: "alg" is missing, none, symmetric (HS*) or not in the
	// verifier's allowlist (§4.3 check 5, §11.6).
	ErrAlgNotAllowed = errors.New("dpop: signature algorithm not allowed")
	// errMissingJWK (ErrMalformedProof): the header has no "jwk" (§4.2).
	errMissingJWK = &reason{"dpop: missing jwk header", ErrMalformedProof}
	// errPrivateJWK (ErrMalformedProof): the "jwk" header contains private or symmetric key
	// members (d, p, q, dp, dq, qi, oth, k) (§4.3 check 7).
	errPrivateJWK = &reason{"dpop: jwk header contains a private key", ErrMalformedProof}
	// errInvalidJWK (ErrMalformedProof): the "jwk" header is not a supported, well-formed public
	// key (unknown kty or curve, point not on the curve, RSA under 2048 bits).
	errInvalidJWK = &reason{"dpop: invalid jwk header", ErrMalformedProof}
	// errAlgKeyMismatch (ErrAlgNotAllowed): "alg" does not fit the key type of "jwk" (for
	// example ES256 with an RSA key, or ES256 with a P-384 key).
	errAlgKeyMismatch = &reason{"dpop: alg does not match the jwk key type", ErrAlgNotAllowed}
	// ErrBadSignature: the signature does not verify with the embedded key
	// (§4.3 check 6).
	ErrBadSignature = errors.New("dpop: invalid proof signature")
	// errMissingClaim (ErrMalformedProof): a required claim (jti, htm, htu, iat, or ath when an
	// access token is presented) is absent or empty (§4.3 check 3).
	errMissingClaim = &reason{"dpop: missing claim", ErrMalformedProof}
	// ErrHTMMismatch: "htm" is not the request method (§4.3 check 8).
	ErrHTMMismatch = errors.New("dpop: htm does not match the request method")
	// ErrHTUMismatch: "htu" is not the request URI after normalization, or
	// carries a query or fragment (§4.2, §4.3 check 9).
	ErrHTUMismatch = errors.New("dpop: htu does not match the request URI")
	// ErrStaleProof: "iat" is older than the acceptance window (§4.3 check 11).
	ErrStaleProof = errors.New("dpop: proof too old")
	// ErrFutureProof: "iat" lies further in the future than the allowed clock
	// skew (§4.3 check 11).
	ErrFutureProof = errors.New("dpop: proof issued in the future")
	// ErrATHMismatch: "ath" is not the hash of the presented access token
	// (§4.3 check 12).
	ErrATHMismatch = errors.New("dpop: ath does not match the access token")
	// errUnexpectedATH (ErrATHMismatch): the proof carries "ath" but no access token was
	// presented with it (a resource-request proof replayed at a token
	// endpoint).
	errUnexpectedATH = &reason{"dpop: ath present without an access token", ErrATHMismatch}
	// ErrReplayedProof: a proof with this key and jti was accepted before
	// (§11.1).
	ErrReplayedProof = errors.New("dpop: proof replayed")
	// ErrReplayCheckUnavailable: the replay store could not record the jti
	// (full, or failing); the proof is refused. Code temporarily_unavailable:
	// answer 503, not a challenge.
	ErrReplayCheckUnavailable = errors.New("dpop: replay check unavailable")
	// ErrNonceRequired: the server requires a nonce and the proof has none
	// (§8, §9). Code use_dpop_nonce: answer with a fresh DPoP-Nonce.
	ErrNonceRequired = errors.New("dpop: nonce required")
	// ErrNonceInvalid: the proof's nonce is not one the server currently
	// accepts (stale or forged). Code use_dpop_nonce.
	ErrNonceInvalid = errors.New("dpop: nonce invalid or expired")
	// ErrKeyMismatch: the access token is bound (cnf.jkt, RFC 9449 §6) to a
	// different key than the proof's. Code invalid_token (§7.1 example).
	ErrKeyMismatch = errors.New("dpop: access token bound to a different key")
	// ErrInvalidRequest: the Request given to Verify is unusable (empty or
	// non-token method, URL that is not absolute http(s)). Code
	// invalid_request.
	ErrInvalidRequest = errors.New("dpop: invalid request method or URL")
)

// reason is a finer cause of a failed check under one of the sentinels: its
// own message, and errors.Is matches the sentinel.
type reason struct {
	msg   string
	class error
}

func (r *reason) Error() string { return r.msg }
func (r *reason) Unwrap() error { return r.class }

// fail builds the error for a failed check. detail must be a constant
// string: it ends up in logs and error_description.
func fail(sentinel error, detail string) error {
	return checkerr.New(sentinel, codeFor(sentinel), "dpop: ", detail)
}

func codeFor(sentinel error) oauthmeta.ErrorCode {
	switch sentinel {
	case ErrNonceRequired, ErrNonceInvalid:
		return oauthmeta.CodeUseDPoPNonce
	case ErrKeyMismatch:
		return oauthmeta.CodeInvalidToken
	case ErrReplayCheckUnavailable:
		return oauthmeta.CodeTemporarilyUnavailable
	case ErrInvalidRequest:
		return oauthmeta.CodeInvalidRequest
	default:
		return oauthmeta.CodeInvalidDPoPProof
	}
}

// OAuthError returns the OAuth error for err: the *oauthmeta.Error it wraps,
// or, for an error from outside this package, invalid_dpop_proof without a
// description. It returns nil for a nil err. Use it for the token endpoint
// error body (RFC 9449 §5, §8) and, through [Challenge], for the resource
// server's WWW-Authenticate header.
func OAuthError(err error) *oauthmeta.Error {
	return checkerr.OAuth(err, oauthmeta.CodeInvalidDPoPProof)
}
