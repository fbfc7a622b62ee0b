package oauthmeta

import "fmt"

// GrantTypeDeviceCode is the grant type of the device authorization grant
// (RFC 8628 §3.4).
const GrantTypeDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"

// Error codes of the device authorization grant's token requests (RFC 8628
// §3.5).
const (
	// CodeAuthorizationPending: the user has not answered yet; poll again
	// after the interval.
	CodeAuthorizationPending ErrorCode = "authorization_pending"
	// CodeSlowDown: the client polls too fast; it adds 5 seconds to its
	// interval for this and every later request.
	CodeSlowDown ErrorCode = "slow_down"
	// CodeExpiredToken: the device code expired; start again.
	CodeExpiredToken ErrorCode = "expired_token"
)

// DeviceAuthorizationResponse is the RFC 8628 §3.2 answer of the device
// authorization endpoint.
type DeviceAuthorizationResponse struct {
	// DeviceCode is "device_code". REQUIRED.
	DeviceCode string `json:"device_code"`
	// UserCode is "user_code", the code the user types. REQUIRED.
	UserCode string `json:"user_code"`
	// VerificationURI is "verification_uri", where the user types it.
	// REQUIRED. Some servers send "verification_url" (an early draft's
	// name); ParseDeviceAuthorizationResponse accepts either.
	VerificationURI string `json:"verification_uri"`
	// VerificationURIComplete is "verification_uri_complete": the
	// verification URI with the user code in it. OPTIONAL.
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	// ExpiresIn is "expires_in", the device code's lifetime in seconds.
	// REQUIRED.
	ExpiresIn int64 `json:"expires_in"`
	// Interval is "interval", the minimum seconds between polls. OPTIONAL;
	// absent means 5.
	Interval int64 `json:"interval,omitempty"`
}

// deviceAuthorizationWire is what the decoder accepts: the RFC's names and
// the draft's verification_url.
type deviceAuthorizationWire struct {
	DeviceAuthorizationResponse
	VerificationURL string `json:"verification_url,omitempty"`
}

// ParseDeviceAuthorizationResponse decodes a device authorization response
// by the rules of [DecodeJSON] and checks its required members: device_code,
// user_code, verification_uri (or verification_url) and a positive
// expires_in; a negative interval is refused. It does not check the URLs:
// the caller applies its own URL policy before showing them.
func ParseDeviceAuthorizationResponse(data []byte) (*DeviceAuthorizationResponse, error) {
	var w deviceAuthorizationWire
	if err := DecodeJSON(data, &w); err != nil {
		return nil, err
	}
	r := w.DeviceAuthorizationResponse
	if r.VerificationURI == "" {
		r.VerificationURI = w.VerificationURL
	}
	switch {
	case r.DeviceCode == "":
		return nil, fmt.Errorf("%w: device_code is missing", ErrMalformed)
	case r.UserCode == "":
		return nil, fmt.Errorf("%w: user_code is missing", ErrMalformed)
	case r.VerificationURI == "":
		return nil, fmt.Errorf("%w: verification_uri is missing", ErrMalformed)
	case r.ExpiresIn <= 0:
		return nil, fmt.Errorf("%w: expires_in must be positive", ErrMalformed)
	case r.Interval < 0:
		return nil, fmt.Errorf("%w: interval must not be negative", ErrMalformed)
	}
	return &r, nil
}
