package client

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpauth/mcpauth/internal/safehttp"
)

var classes = []error{ErrConfig, ErrDiscovery, ErrAuthorization, ErrTokenRequest, ErrForbidden, ErrRevocation}

// classesOf lists the classes err matches.
func classesOf(err error) []error {
	var out []error
	for _, c := range classes {
		if errors.Is(err, c) {
			out = append(out, c)
		}
	}
	return out
}

// Every reason belongs to exactly one class, is an *Error with its
// reason, and matches by reason under errors.Is, wrapped or not.
func TestErrorReasonsHaveOneClass(t *testing.T) {
	tests := []struct {
		err   error
		class error
	}{
		{errDPoPTransport, ErrConfig},
		{errNoResourceMetadata, ErrDiscovery}, {errResourceMismatch, ErrDiscovery}, {errNoAuthServer, ErrDiscovery},
		{errNoAuthServerMetadata, ErrDiscovery}, {errIssuerMismatch, ErrDiscovery}, {errPKCEUnsupported, ErrDiscovery},
		{errInvalidMetadata, ErrDiscovery}, {errUnsafeURL, ErrDiscovery}, {errNoRegistration, ErrDiscovery},
		{errIssuerChanged, ErrDiscovery}, {errRegistration, ErrDiscovery}, {errGrantUnsupported, ErrDiscovery},
		{errDPoPUnsupported, ErrDiscovery}, {errBlockedAddress, ErrDiscovery}, {errFetch, ErrDiscovery},
		{errResponseTooLarge, ErrDiscovery},
		{errUnknownState, ErrAuthorization}, {errIssuerMissing, ErrAuthorization}, {errIssuerParameterMismatch, ErrAuthorization},
		{errRedirectMismatch, ErrAuthorization}, {errAuthorizationResponse, ErrAuthorization}, {errAuthorizer, ErrAuthorization},
		{errTimeout, ErrAuthorization}, {errUnsafeAuthorizationURL, ErrAuthorization},
		{errTokenResponse, ErrTokenRequest}, {errTokenType, ErrTokenRequest}, {errAssertion, ErrTokenRequest},
		{errTokenExchange, ErrTokenRequest},
		{errAttemptLimit, ErrForbidden}, {errInsufficientScope, ErrForbidden}, {errForbiddenStatus, ErrForbidden},
	}
	seen := map[string]error{}
	for _, tt := range tests {
		var ce *Error
		if !errors.As(tt.err, &ce) {
			t.Fatalf("%v is not an *Error", tt.err)
		}
		if prev, ok := seen[ce.Reason]; ok && prev == tt.class {
			t.Errorf("reason %q twice in class %v", ce.Reason, tt.class)
		}
		seen[ce.Reason] = tt.class
		wrapped := fmt.Errorf("%w: detail", tt.err)
		if got := classesOf(wrapped); len(got) != 1 || got[0] != tt.class {
			t.Errorf("%v: classes %v, want only %v", tt.err, got, tt.class)
		}
		if !errors.Is(wrapped, &Error{Reason: ce.Reason}) || errors.Is(wrapped, &Error{Reason: ce.Reason + "x"}) {
			t.Errorf("%v: errors.Is by reason does not match exactly", tt.err)
		}
		if got, want := tt.err.Error(), "client: "+ce.Reason; got != want {
			t.Errorf("Error() = %q, want %q", got, want)
		}
	}
}

// A failed fetch is reported in the class of the operation that fetched,
// and only in it.
func TestWrapFetchKeepsTheCallersClass(t *testing.T) {
	causes := []struct {
		err    error
		reason string
	}{
		{safehttp.ErrBlockedAddress, reasonBlocked},
		{safehttp.ErrScheme, reasonUnsafeURL},
		{safehttp.ErrTooLarge, reasonResponseTooBig},
		{context.DeadlineExceeded, reasonFetch},
	}
	for _, class := range []error{ErrDiscovery, ErrAuthorization, ErrTokenRequest, ErrRevocation} {
		for _, c := range causes {
			err := wrapFetch(class, "test", c.err)
			if got := classesOf(err); len(got) != 1 || got[0] != class {
				t.Errorf("wrapFetch(%v, %v): classes %v", class, c.err, got)
			}
			if !errors.Is(err, &Error{Reason: c.reason}) || !errors.Is(err, c.err) {
				t.Errorf("wrapFetch(%v, %v) = %v: lost the reason %q or the cause", class, c.err, err, c.reason)
			}
		}
	}
}
