package oauthmeta

import "errors"

// Sentinel errors for the rules this package checks. Every error returned by a
// Parse or Validate function wraps exactly one of them; test with errors.Is.
var (
	// ErrMalformed: the document is not a single, well-formed JSON object of
	// the expected shape.
	ErrMalformed = errors.New("oauthmeta: malformed document")
	// ErrMissingField: a required field is absent or empty.
	ErrMissingField = errors.New("oauthmeta: required field missing")
	// ErrIssuerMismatch: authorization server metadata names an issuer that is
	// not identical to the one it was fetched for (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("oauthmeta: issuer does not match")
	// ErrResourceMismatch: protected resource metadata names a resource that is
	// not identical to the one it was fetched for (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("oauthmeta: resource does not match")
	// ErrUnsafeURL: a URL uses a forbidden scheme, plain http to a non-loopback
	// host, a fragment, user information, or is not absolute.
	ErrUnsafeURL = errors.New("oauthmeta: unsafe URL")
	// ErrInvalidResource: a string is not a valid resource indicator
	// (RFC 8707 §2).
	ErrInvalidResource = errors.New("oauthmeta: invalid resource URI")
	// ErrInvalidIssuer: a string is not a valid issuer identifier
	// (RFC 8414 §2).
	ErrInvalidIssuer = errors.New("oauthmeta: invalid issuer identifier")
	// ErrMalformedChallenge: a WWW-Authenticate header does not follow the
	// RFC 9110 §11.6.1 grammar.
	ErrMalformedChallenge = errors.New("oauthmeta: malformed WWW-Authenticate challenge")
	// ErrInvalidScope: a scope string contains characters outside RFC 6749
	// §3.3 scope-token syntax.
	ErrInvalidScope = errors.New("oauthmeta: invalid scope")
)

// fieldError wraps a sentinel with the name of the field it concerns. The
// message names the field, never its value.
type fieldError struct {
	sentinel error
	field    string
	detail   string
}

func (e *fieldError) Error() string {
	msg := e.sentinel.Error() + ": " + e.field
	if e.detail != "" {
		msg += " (" + e.detail + ")"
	}
	return msg
}

func (e *fieldError) Unwrap() error { return e.sentinel }

func errField(sentinel error, field, detail string) error {
	return &fieldError{sentinel: sentinel, field: field, detail: detail}
}
