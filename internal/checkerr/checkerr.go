package checkerr

import (
	"errors"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

type checkError struct {
	reason error
	oauth  *oauthmeta.Error
	detail string
}

func (e *checkError) Error() string {
	if e.detail == "" {
		return e.reason.Error()
	}
	return e.reason.Error() + ": " + e.detail
}

func (e *checkError) Unwrap() []error { return []error{e.reason, e.oauth} }

// New returns the error of a failed check. The OAuth error's description is
// the reason's message without prefix (the package prefix, such as
// "dpop: "), followed by detail in parentheses. detail must be a constant
// string.
func New(reason error, code oauthmeta.ErrorCode, prefix, detail string) error {
	desc := strings.TrimPrefix(reason.Error(), prefix)
	if detail != "" {
		desc += " (" + detail + ")"
	}
	return &checkError{reason: reason, oauth: &oauthmeta.Error{Code: code, Description: desc}, detail: detail}
}

// OAuth returns the OAuth error err carries (the *oauthmeta.Error of an
// error from New, or any other it wraps), an error of code fallback
// without a description for an error that carries none, and nil for a nil
// err.
func OAuth(err error, fallback oauthmeta.ErrorCode) *oauthmeta.Error {
	if err == nil {
		return nil
	}
	var oe *oauthmeta.Error
	if errors.As(err, &oe) {
		return oe
	}
	return &oauthmeta.Error{Code: fallback}
}
