package authserver

import (
	"context"
	"slices"
	"time"
)

// MaxDeviceCodes bounds the device codes a store holds, since anyone with
// a client_id may start a device login: past the bound, the memory store
// drops the expired codes and, if still full, answers new ones with
// temporarily_unavailable, as pgstore does.
const MaxDeviceCodes = 10000

// DeviceCodeGrace is how long a store keeps a device code after it
// expired, so that a device polling late is told expired_token rather
// than invalid_grant; a [Sweeper] drops it afterwards.
const DeviceCodeGrace = 10 * time.Minute

// The states of a [DeviceCode].
const (
	DevicePending  = "pending"
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
)

// DeviceCodeStore keeps the codes of the device authorization grant (RFC
// 8628) under the hash of the device code, and finds them by the hash of
// the user code. Only [Config.Device] uses it.
type DeviceCodeStore interface {
	// SaveDeviceCode saves a new code. It returns [ErrAlreadyUsed] and
	// saves nothing when a code with the same Key or UserCodeKey exists
	// (the server then draws new codes), and temporarily_unavailable when
	// the store is full.
	SaveDeviceCode(ctx context.Context, d *DeviceCode) error
	// DeviceCode returns the code whose Key is key.
	DeviceCode(ctx context.Context, key string) (*DeviceCode, error)
	// DeviceCodeByUserCode returns the code whose UserCodeKey is
	// userCodeKey.
	DeviceCodeByUserCode(ctx context.Context, userCodeKey string) (*DeviceCode, error)
	// UpdateDeviceCode atomically reads the code under key, calls change
	// with a copy and, when change returns nil, saves the copy and returns
	// it. When change returns an error nothing is saved and that error is
	// returned. change is called at most once, with the store's
	// consistency guarantees held, and must not block. It may not change
	// Key or UserCodeKey.
	UpdateDeviceCode(ctx context.Context, key string, change func(*DeviceCode) error) (*DeviceCode, error)
}

// DeviceCode is one device authorization (RFC 8628 §3.2): the device
// code the client polls with, the user code the user types on the
// verification page, and what the user decided there.
type DeviceCode struct {
	// Key is the base64url SHA-256 of the device code, UserCodeKey that
	// of the normalised user code (upper case, no dash); the codes
	// themselves are never stored.
	Key         string   `json:"key"`
	UserCodeKey string   `json:"user_code_key"`
	ClientID    string   `json:"client_id"`
	Scopes      []string `json:"scopes,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	// Status is DevicePending until the user answers, then
	// DeviceApproved or DeviceDenied.
	Status string `json:"status"`
	// Subject, UpstreamTokens and Refresh are set by the approval: the
	// user, the login's record in the token vault, and whether the grant
	// has refresh tokens. Scopes may have been narrowed by the grant
	// policy then.
	Subject        string `json:"sub,omitempty"`
	UpstreamTokens string `json:"upstream_tokens,omitempty"`
	Refresh        bool   `json:"refresh,omitempty"`
	// Interval is the polling interval in seconds; it grows by 5 at each
	// slow_down. LastPolledAt is the time of the last token request.
	Interval     int64     `json:"interval"`
	LastPolledAt time.Time `json:"last_polled_at,omitzero"`
	IssuedAt     time.Time `json:"iat"`
	ExpiresAt    time.Time `json:"exp"`
	// RedeemedBy is the ID of the grant the code produced; empty while
	// unused.
	RedeemedBy string `json:"redeemed_by,omitempty"`
}

// slowDownStep is what RFC 8628 §3.5 adds to the interval at each
// slow_down.
const slowDownStep = 5

// Poll records a token request at now and reports whether it came sooner
// than Interval after the previous one; then Interval grows by five
// seconds (RFC 8628 §3.5) for this and every later request.
func (d *DeviceCode) Poll(now time.Time) (tooFast bool) {
	if !d.LastPolledAt.IsZero() && now.Sub(d.LastPolledAt) < time.Duration(d.Interval)*time.Second {
		tooFast = true
		d.Interval += slowDownStep
	}
	d.LastPolledAt = now
	return tooFast
}

// Swept reports whether a sweep at now drops d: it expired more than
// [DeviceCodeGrace] ago.
func (d *DeviceCode) Swept(now time.Time) bool { return d.ExpiresAt.Add(DeviceCodeGrace).Before(now) }

func cloneDeviceCode(d *DeviceCode) *DeviceCode {
	c := *d
	c.Scopes = slices.Clone(d.Scopes)
	c.Resources = slices.Clone(d.Resources)
	return &c
}
