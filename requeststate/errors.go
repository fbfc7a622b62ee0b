package requeststate

import (
	"errors"
	"fmt"
)

// ErrRefused is wrapped by every refusal of [Sealer.Open], beside one of
// the reasons below: answer the request as invalid (JSON-RPC -32602),
// never act on the state.
var ErrRefused = errors.New("requeststate: refused")

// Reasons of a refusal; each error of [Sealer.Open] wraps exactly one.
var (
	// ErrMalformed: the state does not decode or does not authenticate
	// (tampered with, truncated, sealed under a key not configured).
	ErrMalformed = errors.New("requeststate: malformed or tampered state")
	// ErrExpired: the state's time to live has passed.
	ErrExpired = errors.New("requeststate: expired state")
	// ErrMismatch: the state was sealed for another issuer, subject,
	// client, method, name or arguments; a [*MismatchError] names which.
	ErrMismatch = errors.New("requeststate: state bound to another request")
	// ErrReplayed: the state was opened before (single use, with a
	// replay store).
	ErrReplayed = errors.New("requeststate: state already used")
	// ErrUnavailable: the replay store failed; the state is refused
	// rather than possibly accepted twice.
	ErrUnavailable = errors.New("requeststate: replay store unavailable")
)

// ErrBinding is returned by [Sealer.Seal] (and wrapped, beside
// [ErrMismatch], by [Sealer.Open]) for an incomplete [Binding]: without an
// issuer, subject, client and method a state would bind to nobody.
var ErrBinding = errors.New("requeststate: incomplete binding")

// MismatchError names the bound value that differs. It wraps [ErrRefused]
// and [ErrMismatch]; it never holds the values themselves.
type MismatchError struct {
	// Field is "issuer", "subject", "client", "method", "name" or
	// "arguments".
	Field string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("requeststate: state bound to another %s", e.Field)
}

// Unwrap returns [ErrRefused] and [ErrMismatch].
func (e *MismatchError) Unwrap() []error { return []error{ErrRefused, ErrMismatch} }

// refused wraps a reason with ErrRefused.
func refused(reason error) error { return fmt.Errorf("%w: %w", ErrRefused, reason) }
