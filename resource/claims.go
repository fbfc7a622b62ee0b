package resource

import (
	"math"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxNumericDate is 9999-12-31T23:59:59Z; later dates are malformed.
const maxNumericDate = 253402300799

// numericDate converts an RFC 7519 §2 NumericDate (seconds, possibly
// fractional). ok is false for negative, non-finite or absurd values.
func numericDate(f float64) (time.Time, bool) {
	if math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// claimSet is the part of a token's claims (JWT payload or introspection
// response) that the RFC 9068 §4 / RFC 7662 §4 checks look at.
type claimSet struct {
	issuer   string
	audience []string
	exp      *float64
	nbf      *float64
	iat      *float64
	bound    bool // a "cnf" claim: sender-constrained (RFC 7800, RFC 9449 §6)
}

// checkTimes applies the exp, nbf and iat rules with the configured
// leeway; exp is required.
func (v *Verifier) checkTimes(c *claimSet, now time.Time) (exp, iat time.Time, err error) {
	if c.exp == nil {
		return exp, iat, ErrMissingExpiry
	}
	exp, ok := numericDate(*c.exp)
	if !ok {
		return exp, iat, ErrMalformedToken
	}
	if !now.Before(exp.Add(v.leeway)) {
		return exp, iat, ErrExpired
	}
	if c.nbf != nil {
		nbf, ok := numericDate(*c.nbf)
		if !ok {
			return exp, iat, ErrMalformedToken
		}
		if now.Add(v.leeway).Before(nbf) {
			return exp, iat, ErrNotYetValid
		}
	}
	if c.iat != nil {
		iat, ok = numericDate(*c.iat)
		if !ok {
			return exp, iat, ErrMalformedToken
		}
		if now.Add(v.leeway).Before(iat) {
			return exp, iat, ErrIssuedInFuture
		}
	}
	return exp, iat, nil
}

// checkAudience reports whether aud names this resource (RS-08): an exact
// match first, then a match after RFC 8707 canonicalisation, so that
// "HTTPS://H/mcp" is accepted for "https://h/mcp".
func (v *Verifier) checkAudience(aud []string) error {
	for _, a := range aud {
		if _, ok := v.audiences[a]; ok {
			return nil
		}
	}
	for _, a := range aud {
		if len(a) > 2048 {
			continue
		}
		if c, err := oauthmeta.CanonicalResource(a); err == nil {
			if _, ok := v.audiences[c]; ok {
				return nil
			}
		}
	}
	return ErrAudience
}

// checkClaims runs every claim check except the issuer lookup, cheapest
// first. It returns the expiry and issue times. A bound token passes only
// when allowBound is set (DPoP enabled, and the scheme may carry one);
// which scheme may present it is decided later, per request.
func (v *Verifier) checkClaims(c *claimSet, now time.Time, allowBound bool) (exp, iat time.Time, err error) {
	if c.bound && !allowBound {
		// RS-18: a DPoP- or mTLS-bound token presented as a bearer token.
		return exp, iat, ErrBoundToken
	}
	if exp, iat, err = v.checkTimes(c, now); err != nil {
		return exp, iat, err
	}
	if err := v.checkAudience(c.audience); err != nil {
		return exp, iat, err
	}
	return exp, iat, nil
}

// scopeInline is how many scope tokens a verification stores in its own
// allocation (authValue.scopes) before the list needs one of its own.
const scopeInline = 4

// parseScope splits a "scope" claim with oauthmeta.AppendScope (RFC 6749
// §3.3; "" gives nil), storing the tokens in buf when they fit, else in one
// allocation. The result's capacity is its length, so an append by a caller
// of a (cached, shared) TokenInfo never writes into buf. ok is false for an
// invalid scope-token.
func parseScope(s string, buf []string) (scopes []string, ok bool) {
	if s == "" {
		return nil, true
	}
	out := buf[:0]
	if n := strings.Count(s, " ") + 1; n > len(buf) {
		out = make([]string, 0, n)
	}
	out, err := oauthmeta.AppendScope(out, s)
	if err != nil {
		return nil, false
	}
	return out[:len(out):len(out)], true
}
