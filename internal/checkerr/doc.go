// Package checkerr is the error type shared by mcpauth's JWT checkers
// (package dpop, internal/jwtassert): one failed check, carrying the reason
// sentinel a caller tests with errors.Is and the OAuth error
// (*oauthmeta.Error) it maps to, which errors.As extracts.
//
// It holds no values from the checked input: the detail is a constant
// naming the check, so an error can reach a log or an error_description
// without leaking a token.
//
// It does not decide which code a failure maps to; each checker does.
package checkerr
