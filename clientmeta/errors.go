package clientmeta

import "errors"

// Sentinel errors. Every error this package returns wraps at least one of
// them; test with errors.Is. Messages name the rule that failed, never the
// document's content.
var (
	// ErrInvalidClientID: a client_id is not an acceptable Client ID
	// Metadata Document URL.
	ErrInvalidClientID = errors.New("clientmeta: invalid client_id URL")
	// ErrInvalidDocument: the document is not a single JSON object, or
	// lacks or misuses a required member.
	ErrInvalidDocument = errors.New("clientmeta: invalid client metadata document")
	// ErrClientIDMismatch: the document's client_id is not identical to the
	// URL it was fetched from. It always comes wrapped
	// together with [ErrInvalidDocument].
	ErrClientIDMismatch = errors.New("clientmeta: client_id does not match the document URL")
	// ErrSharedSecret: the document declares a client secret or a
	// shared-secret authentication method. It always
	// comes wrapped together with [ErrInvalidDocument].
	ErrSharedSecret = errors.New("clientmeta: shared-secret client authentication is not allowed")
	// ErrInvalidRedirectURI: a redirect URI is not absolute, carries a
	// fragment or user information, uses plain http to a non-loopback host,
	// or uses a scheme that can run code in a browser.
	ErrInvalidRedirectURI = errors.New("clientmeta: invalid redirect URI")
	// ErrFetch: the document could not be fetched under the fetch rules
	// ([Resolver.Resolve]): wrong status, redirect, size, content type,
	// timeout, or a refused address.
	ErrFetch = errors.New("clientmeta: fetching the client metadata document failed")
	// ErrUntrusted: the trust policy refused the client_id before any fetch.
	ErrUntrusted = errors.New("clientmeta: client_id refused by the trust policy")
	// ErrConfig: a [ResolverConfig] or [HandlerConfig] is invalid.
	ErrConfig = errors.New("clientmeta: invalid configuration")
)

// ruleError wraps one or two sentinels with the rule that failed. The
// message never contains input text.
type ruleError struct {
	sentinels []error
	rule      string
}

func (e *ruleError) Error() string {
	msg := e.sentinels[0].Error()
	if e.rule != "" {
		msg += ": " + e.rule
	}
	return msg
}

func (e *ruleError) Unwrap() []error { return e.sentinels }

func errRule(rule string, sentinels ...error) error {
	return &ruleError{sentinels: sentinels, rule: rule}
}
