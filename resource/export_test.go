package resource

import (
	"context"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// The specific refusal reasons, for tests that check which one a request
// got (the package exports only their classes and the [Error] type).
var (
	ErrMalformedToken        = errMalformedToken
	ErrTokenTooLarge         = errTokenTooLarge
	ErrAlgorithm             = errAlgorithm
	ErrTokenType             = errTokenType
	ErrSignature             = errSignature
	ErrIssuer                = errIssuer
	ErrAudience              = errAudience
	ErrRequiredClaim         = errRequiredClaim
	ErrTenant                = errTenant
	ErrNoClient              = errNoClient
	ErrClient                = errClient
	ErrExpired               = jwtverify.ErrExpired
	ErrMissingExpiry         = jwtverify.ErrMissingExpiry
	ErrNotYetValid           = jwtverify.ErrNotYetValid
	ErrIssuedInFuture        = jwtverify.ErrIssuedInFuture
	ErrBoundToken            = errBoundToken
	ErrInactive              = errInactive
	ErrUnsupportedToken      = errUnsupportedToken
	ErrDPoPUnboundToken      = errDPoPUnboundToken
	ErrDPoPKeyMismatch       = dpop.ErrKeyMismatch
	ErrDPoPRequired          = errDPoPRequired
	ErrDPoPProofMissing      = dpop.ErrMissingProof
	ErrDPoPMultipleProofs    = dpop.ErrMultipleProofs
	ErrDPoPMalformed         = dpop.ErrMalformedProof
	ErrDPoPAlgorithm         = dpop.ErrAlgNotAllowed
	ErrDPoPSignature         = dpop.ErrBadSignature
	ErrDPoPTokenHash         = dpop.ErrATHMismatch
	ErrDPoPNonceRequired     = dpop.ErrNonceRequired
	ErrDPoPNonceInvalid      = dpop.ErrNonceInvalid
	ErrDPoPReplayed          = dpop.ErrReplayedProof
	ErrDPoPReplayUnavailable = dpop.ErrReplayCheckUnavailable
	ErrDPoPNonceUnavailable  = errDPoPNonceUnavailable
	ErrMultipleCredentials   = errMultipleCredentials
	ErrMalformedCredentials  = errMalformedCredentials
	ErrTokenInQuery          = errTokenInQuery
	ErrTokenInBody           = errTokenInBody
	ErrKeysUnavailable       = errKeysUnavailable
	ErrIntrospection         = errIntrospection
	ErrVerifierClosed        = errVerifierClosed
	ErrHeaderMismatch        = errHeaderMismatch
	ErrBatch                 = errBatch
	ErrMalformedBody         = errMalformedBody
	ErrBodyTooLarge          = errBodyTooLarge
	ErrSessionNotBound       = errSessionNotBound
	ErrSessionMultiple       = errSessionMultiple
	ErrOriginNotAllowed      = errOriginNotAllowed
)

// Stages of the fresh-token path, for BenchmarkPairedFreshStages: the
// claims decode alone, the token checks without the cache, and the checks
// with the cache's lookup and insert.
func DecodeAccessClaims(payload []byte) error {
	var c accessClaims
	return jwtverify.DecodeClaims(payload, &c)
}

func (v *Verifier) VerifyUncached(ctx context.Context, raw string) error {
	return v.verifyJWT(ctx, raw, v.clock.Now(), newAuthValue(raw), schemeBearer)
}

func (v *Verifier) VerifyShaped(ctx context.Context, raw string) error {
	_, err := v.verify(ctx, raw, schemeBearer, shapeJWS)
	return err
}

// RateLimitTracked is the number of identities the in-memory rate-limit
// tables of v hold.
func RateLimitTracked(v *Verifier) int { return v.limits.tracked() }
