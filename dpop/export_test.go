package dpop

// ProcessCPU exposes processCPU to the external test package.
var ProcessCPU = processCPU

// NormalizeHTU, AccessTokenHash and ProofType expose the unexported
// helpers to the external test package.
var (
	NormalizeHTU    = normalizeHTU
	AccessTokenHash = accessTokenHash
)

const ProofType = proofType

// The finer reasons, for tests that check which one a proof got.
var (
	ErrProofTooLarge  = errProofTooLarge
	ErrWrongType      = errWrongType
	ErrMissingJWK     = errMissingJWK
	ErrPrivateJWK     = errPrivateJWK
	ErrInvalidJWK     = errInvalidJWK
	ErrMissingClaim   = errMissingClaim
	ErrAlgKeyMismatch = errAlgKeyMismatch
	ErrUnexpectedATH  = errUnexpectedATH
)
