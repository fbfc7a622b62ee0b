package resource

import (
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// timeError maps the failed time checks to this package's reasons.
func timeError(err error) error {
	switch err {
	case jwtverify.ErrMissingExpiry:
		return errMissingExpiry
	case jwtverify.ErrExpired:
		return errExpired
	case jwtverify.ErrNotYetValid:
		return errNotYetValid
	case jwtverify.ErrIssuedInFuture:
		return errIssuedInFuture
	}
	return errMalformedToken
}

// checkAudience reports whether aud names this resource (RS-08): an exact
// match first, then a match after RFC 8707 canonicalisation, so that
// "HTTPS://H/mcp" is accepted for "https://h/mcp", then the audiences of
// the issuer's profile p (nil for RFC 9068).
func (v *Verifier) checkAudience(aud []string, p *tokenProfile) error {
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
	if p != nil && p.audienceAccepted(aud) {
		return nil
	}
	return errAudience
}

// checkClaims runs every claim check except the issuer lookup, cheapest
// first. It returns the expiry and issue times. A bound token (one with
// "cnf") passes only when allowBound is set (DPoP enabled, and the scheme
// may carry one); which scheme may present it is decided later, per
// request. p is the issuer's profile, nil for RFC 9068.
func (v *Verifier) checkClaims(c *jwtverify.Claims, bound bool, now time.Time, allowBound bool, p *tokenProfile) (exp, iat time.Time, err error) {
	if bound && !allowBound {
		// RS-18: a DPoP- or mTLS-bound token presented as a bearer token.
		return exp, iat, errBoundToken
	}
	if exp, iat, err = (jwtverify.Times{Leeway: v.leeway}).Check(c, now); err != nil {
		return exp, iat, timeError(err)
	}
	if err := v.checkAudience(c.Audience, p); err != nil {
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
