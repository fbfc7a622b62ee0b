package jwtverify

import (
	"errors"
	"math"
	"time"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Claims are the registered claims of RFC 7519 §4.1. Verifiers embed it
// (with the tag `json:",inline"`) in the struct of their profile's claims.
// The times stay numbers until [Times.Check] has judged them.
type Claims struct {
	Issuer    string             `json:"iss"`
	Subject   string             `json:"sub"`
	Audience  oauthmeta.Audience `json:"aud"`
	Expiry    *float64           `json:"exp"`
	NotBefore *float64           `json:"nbf"`
	IssuedAt  *float64           `json:"iat"`
	ID        string             `json:"jti"`

	// times is where DecodeClaims points Expiry, NotBefore and IssuedAt
	// before it decodes, so that a time costs no allocation of its own.
	times [3]float64
}

// registered is implemented by Claims and by every struct that embeds it.
type registered interface{ registered() *Claims }

func (c *Claims) registered() *Claims { return c }

// timeFields returns the addresses of the three time pointers, in the
// order of c.times.
func (c *Claims) timeFields() [3]**float64 {
	return [3]**float64{&c.Expiry, &c.NotBefore, &c.IssuedAt}
}

// DecodeClaims decodes a JWT payload into v, a struct that embeds
// [Claims] or has the claims it reads, with the project's one JSON policy
// (internal/jsonx): one object, names matched case-sensitively, a
// duplicate name refused, unknown members ignored.
//
// When v embeds Claims, each nil time pointer is first pointed at storage
// in the Claims holding NaN, which go-json-experiment decodes into in place
// of allocating; a time still NaN afterwards was absent (JSON has no NaN)
// and its pointer is nil again, and a JSON null sets it to nil as before.
// Storage no pointer uses is left zero, so no NaN stays behind to make two
// decodes of one payload compare unequal.
func DecodeClaims(payload []byte, v any) error {
	r, ok := v.(registered)
	if !ok {
		return jsonx.DecodeObject(payload, v)
	}
	c := r.registered()
	fields := c.timeFields()
	for i, p := range fields {
		if *p == nil {
			c.times[i] = math.NaN()
			*p = &c.times[i]
		}
	}
	err := jsonx.DecodeObject(payload, v)
	for i, p := range fields {
		switch {
		case *p != &c.times[i]: // null, or the caller's own storage
			c.times[i] = 0
		case math.IsNaN(c.times[i]): // absent
			*p, c.times[i] = nil, 0
		}
	}
	return err
}

// MaxNumericDate is 9999-12-31T23:59:59Z: a later (or negative, or not
// finite) NumericDate is malformed.
const MaxNumericDate = 253402300799

// NumericDate converts an RFC 7519 §2 NumericDate (seconds, possibly
// fractional). ok is false outside 0..[MaxNumericDate].
func NumericDate(f float64) (t time.Time, ok bool) {
	if math.IsNaN(f) || f < 0 || f > MaxNumericDate {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// Failed time checks. Their messages, without the package prefix, are
// the reasons a verifier may show.
var (
	ErrMissingExpiry   = errors.New("jwtverify: token has no expiry")
	ErrMissingIssuedAt = errors.New("jwtverify: no iat")
	ErrBadDate         = errors.New("jwtverify: NumericDate out of range")
	ErrExpired         = errors.New("jwtverify: token expired")
	ErrNotYetValid     = errors.New("jwtverify: token not yet valid")
	ErrIssuedInFuture  = errors.New("jwtverify: token issued in the future")
	ErrLifetimeTooLong = errors.New("jwtverify: exp too far in the future")
)

// Times is the one rule for exp, nbf and iat (RFC 7519 §4.1.4–6, RFC 9068
// §4, RFC 7523 §3 items 4–6): exp is required and must not have passed,
// nbf and iat must not lie in the future, each with Leeway of clock skew.
type Times struct {
	Leeway time.Duration
	// MaxLifetime, when positive, refuses an exp further than that (plus
	// Leeway) from now: RFC 7523 §3 item 4's "unreasonably far in the
	// future".
	MaxLifetime time.Duration
	// RequireIssuedAt makes iat mandatory.
	RequireIssuedAt bool
}

// Check applies the rule at now and returns exp and iat (zero when
// absent). The error is one of this package's sentinels.
func (r Times) Check(c *Claims, now time.Time) (exp, iat time.Time, err error) {
	if c.Expiry == nil {
		return exp, iat, ErrMissingExpiry
	}
	exp, ok := NumericDate(*c.Expiry)
	if !ok {
		return exp, iat, ErrBadDate
	}
	if !now.Before(exp.Add(r.Leeway)) {
		return exp, iat, ErrExpired
	}
	if r.MaxLifetime > 0 && exp.After(now.Add(r.MaxLifetime+r.Leeway)) {
		return exp, iat, ErrLifetimeTooLong
	}
	if c.NotBefore != nil {
		nbf, ok := NumericDate(*c.NotBefore)
		if !ok {
			return exp, iat, ErrBadDate
		}
		if now.Add(r.Leeway).Before(nbf) {
			return exp, iat, ErrNotYetValid
		}
	}
	if c.IssuedAt == nil {
		if r.RequireIssuedAt {
			return exp, iat, ErrMissingIssuedAt
		}
		return exp, iat, nil
	}
	if iat, ok = NumericDate(*c.IssuedAt); !ok {
		return exp, iat, ErrBadDate
	}
	if now.Add(r.Leeway).Before(iat) {
		return exp, iat, ErrIssuedInFuture
	}
	return exp, iat, nil
}
