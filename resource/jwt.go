package resource

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// verifyJWT validates an RFC 9068 JWT access token: the cheap
// checks (shape, algorithm, type, issuer, audience, times) first, so that
// a token that fails them never makes a key source fetch; then the key
// lookup by "kid" and the signature. Header members jku, x5u, x5c and jwk
// are never used to find a key (RFC 8725 §3.10).
//
// A token with "cnf" passes only with the DPoP scheme (and DPoP enabled);
// its "cnf"."jkt" goes to TokenInfo.JKT for the proof check.
func (v *Verifier) verifyJWT(ctx context.Context, raw string, now time.Time, av *authValue, scheme string) error {
	jws, err := jwtverify.ParseCompact(raw, v.joseAlgs)
	if err == jwtverify.ErrAlgorithm {
		return errAlgorithm
	} else if err != nil {
		return errMalformedToken
	}
	h := jws.Signatures[0].Protected
	if v.profiled {
		return v.verifyProfiled(ctx, jws, &h, now, av, scheme)
	}
	if err := v.checkHeader(&h); err != nil {
		return err
	}
	payload := jws.UnsafePayloadWithoutVerification()
	var c accessClaims
	c.Audience = av.aud[:0:1] // a single audience decodes into av
	if jwtverify.DecodeClaims(payload, &c) != nil {
		return errMalformedToken
	}
	iss, ok := v.issuers[c.Issuer]
	if !ok {
		return errIssuer // exact match with a configured issuer
	}
	bound := c.Confirmation != nil
	exp, iat, err := v.checkClaims(&c.Claims, bound, now, v.dpop != nil && scheme == schemeDPoP, nil)
	if err != nil {
		return err
	}
	scopes, ok := parseScope(c.Scope, av.scopes[:])
	if !ok {
		return errMalformedToken
	}
	return accept(ctx, jws, iss.keys, av, verified{
		claims: &c.Claims, cnf: c.Confirmation, exp: exp, iat: iat, payload: payload,
		profiled: profiled{clientID: c.ClientID, scopes: scopes},
	})
}

// verified is what the claim checks of either path found in a token whose
// signature is still to be checked.
type verified struct {
	claims   *jwtverify.Claims
	cnf      *oauthmeta.Confirmation // nil for an unbound token
	exp, iat time.Time
	payload  []byte
	profiled
}

// accept is the last step of both paths: the key lookup and the signature,
// the dearest check, and then the TokenInfo of the token t describes.
func accept(ctx context.Context, jws *jose.JSONWebSignature, keys keyset.Source, av *authValue, t verified) error {
	var jkt string
	if t.cnf != nil {
		jkt = t.cnf.JKT
	}
	actors, err := actorsOf(t.payload)
	if err != nil {
		return err
	}
	if err := verifySignature(ctx, jws, keys); err != nil {
		return err
	}
	c := t.claims
	av.bound = t.cnf != nil
	*av.info = TokenInfo{
		Scheme:   schemeFor(jkt),
		Issuer:   c.Issuer,
		Subject:  c.Subject,
		ClientID: t.clientID,
		Tenant:   t.tenant,
		Audience: c.Audience[:len(c.Audience):len(c.Audience)],
		Scopes:   t.scopes,
		Expiry:   t.exp,
		IssuedAt: t.iat,
		ID:       c.ID,
		JKT:      jkt,
		Claims:   t.payload,
		Actors:   actors,
	}
	return nil
}

// actorsOf returns the actor chain of a token's claims: nil without an
// "act" member (the common case costs a byte search), else the parsed
// chain, a malformed one refusing the token.
func actorsOf(payload []byte) ([]oauthmeta.Actor, error) {
	if !bytes.Contains(payload, []byte(`"act"`)) {
		return nil, nil
	}
	var c struct {
		Act jsontext.Value `json:"act"`
	}
	if jsonx.DecodeObject(payload, &c) != nil {
		return nil, errMalformedToken
	}
	if len(c.Act) == 0 {
		return nil, nil
	}
	a, err := oauthmeta.ParseActor(c.Act)
	if err != nil {
		return nil, errMalformedActor
	}
	return a.Chain(), nil
}

// accessClaims is the RFC 9068 §2.2 payload: the registered claims and
// the OAuth ones. A "cnf" that is not an object is malformed; one without
// "jkt" binds the token by other means (such as mTLS's "x5t#S256"),
// which this resource server cannot check.
type accessClaims struct {
	jwtverify.Claims `json:",inline"`
	ClientID         string                  `json:"client_id"`
	Scope            string                  `json:"scope"`
	Confirmation     *oauthmeta.Confirmation `json:"cnf"`
}

// schemeFor is the scheme a verified token is used with: DPoP when bound
// to a key thumbprint.
func schemeFor(jkt string) string {
	if jkt != "" {
		return schemeDPoP
	}
	return schemeBearer
}

// checkHeader applies the RFC 9068 §4 type rule and refuses the unencoded
// payload option (RFC 7797), for a Verifier whose issuers all issue RFC
// 9068 tokens.
func (v *Verifier) checkHeader(h *jose.Header) error {
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	if !jwtverify.TypeIs(typ, "at+jwt") {
		return errTokenType
	}
	return nil
}

// verifySignature checks the signature with the issuer's keys through the
// one JWT signature path (jwtverify.VerifySignature).
func verifySignature(ctx context.Context, jws *jose.JSONWebSignature, src keyset.Source) error {
	_, err := jwtverify.VerifySignature(ctx, jws, src)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwtverify.ErrSignature):
		return errSignature
	case errors.Is(err, jwtverify.ErrUnknownKey):
		return errors.Join(ErrUnknownKey, err)
	case errors.Is(err, remotekeys.ErrClosed):
		return errVerifierClosed
	case errors.Is(err, ErrInvalidToken), errors.Is(err, ErrUnavailable):
		return err // a refusal of this package, from a caller's source
	case ctx.Err() != nil:
		return errKeysUnavailable
	}
	return errors.Join(errKeysUnavailable, err)
}

// checkAudience reports whether aud names this resource: an exact
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
		// a DPoP- or mTLS-bound token presented as a bearer token.
		return exp, iat, errBoundToken
	}
	if exp, iat, err = (jwtverify.Times{Leeway: v.leeway}).Check(c, now); errors.Is(err, jwtverify.ErrBadDate) {
		return exp, iat, errMalformedToken
	} else if err != nil {
		return exp, iat, refusal(ErrInvalidToken, err, false)
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

// rfc9068Profile is the zero [Profile] as a tokenProfile, for the issuers
// without one in a Verifier where another issuer has one: the rules of
// verifyJWT's own path (typ at+jwt, "scope" a string, "client_id"
// optional), read from the members.
var rfc9068Profile = func() *tokenProfile {
	p, _ := compileProfile(Profile{Types: []string{TypeAccessToken}})
	return p
}()

// verifyProfiled is verifyJWT for a Verifier with an issuer that has a
// [Profile]: the claims are decoded with every member kept for the
// profile's claim paths, and the type rule waits for the issuer, whose
// profile it is. The order stays cheap checks first: issuer, type, binding,
// times, audience, the profile's claims, then the key lookup and the
// signature.
func (v *Verifier) verifyProfiled(ctx context.Context, jws *jose.JSONWebSignature, h *jose.Header, now time.Time, av *authValue, scheme string) error {
	payload := jws.UnsafePayloadWithoutVerification()
	var c profileClaims
	c.Audience = av.aud[:0:1]
	if jwtverify.DecodeClaims(payload, &c) != nil {
		return errMalformedToken
	}
	iss := v.issuers[c.Issuer]
	if iss == nil {
		return errIssuer
	}
	p := iss.profile
	if p == nil {
		p = rfc9068Profile
	}
	if !p.typeAccepted(h) {
		return errTokenType
	}
	bound := c.Confirmation != nil
	exp, iat, err := v.checkClaims(&c.Claims, bound, now, v.dpop != nil && scheme == schemeDPoP, iss.profile)
	if err != nil {
		return err
	}
	r, err := p.read(c.Members, iss.tenant, av.scopes[:])
	if err != nil {
		return err
	}
	return accept(ctx, jws, iss.keys, av, verified{
		claims: &c.Claims, cnf: c.Confirmation, exp: exp, iat: iat, payload: payload, profiled: r,
	})
}
