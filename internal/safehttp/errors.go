package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
)

// Sentinel errors; each typed error below matches one with errors.Is.
var (
	// ErrBlockedAddress: the target resolves to an address that may not be
	// contacted.
	ErrBlockedAddress = errors.New("safehttp: address not allowed")
	// ErrScheme: the URL scheme is not allowed (https only, http to
	// loopback in insecure mode).
	ErrScheme = errors.New("safehttp: URL scheme not allowed")
	// ErrRedirect: the server answered with a redirect, which is refused or
	// exceeded the allowed number of hops.
	ErrRedirect = errors.New("safehttp: redirect refused")
	// ErrTooLarge: the response body exceeds the size cap.
	ErrTooLarge = errors.New("safehttp: response too large")
	// ErrStatus: the response status is not 200.
	ErrStatus = errors.New("safehttp: unexpected HTTP status")
	// ErrContentType: the response Content-Type is not acceptable.
	ErrContentType = errors.New("safehttp: unexpected content type")
	// ErrInvalidURL: the URL cannot be fetched at all.
	ErrInvalidURL = errors.New("safehttp: invalid URL")
)

// BlockedAddressError reports a refused target address. Host is the name as
// written in the URL; Addr is the address it resolved to.
type BlockedAddressError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("safehttp: %s resolves to %s (%s): address not allowed", e.Host, e.Addr, e.Reason)
}

// Is matches [ErrBlockedAddress].
func (e *BlockedAddressError) Is(target error) bool { return target == ErrBlockedAddress }

// StatusError reports a response status other than 200 OK.
type StatusError struct {
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("safehttp: unexpected HTTP status %d", e.StatusCode)
}

// Is matches [ErrStatus].
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// ContentTypeError reports an unacceptable Content-Type.
type ContentTypeError struct {
	ContentType string
}

func (e *ContentTypeError) Error() string {
	ct := e.ContentType
	if len(ct) > 64 {
		ct = ct[:64] + "…"
	}
	return fmt.Sprintf("safehttp: unexpected content type %q", ct)
}

// Is matches [ErrContentType].
func (e *ContentTypeError) Is(target error) bool { return target == ErrContentType }

// TooLargeError reports a body over the cap.
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("safehttp: response body exceeds %d bytes", e.Limit)
}

// Is matches [ErrTooLarge].
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// RedirectError reports a refused redirect.
type RedirectError struct {
	StatusCode int
	Hops       int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("safehttp: redirect (status %d) refused after %d hop(s)", e.StatusCode, e.Hops)
}

// Is matches [ErrRedirect].
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }
