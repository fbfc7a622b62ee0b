package resource

import (
	"context"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

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
	if err := checkEncodedPayload(h); err != nil {
		return err
	}
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
	var jkt string
	if bound {
		jkt = c.Confirmation.JKT
	}
	if err := verifySignature(ctx, jws, iss.keys, h.KeyID, h.Algorithm); err != nil {
		return err
	}
	av.bound = bound
	*av.info = TokenInfo{
		Scheme:   schemeFor(jkt),
		Issuer:   c.Issuer,
		Subject:  c.Subject,
		ClientID: r.clientID,
		Tenant:   r.tenant,
		Audience: c.Audience[:len(c.Audience):len(c.Audience)],
		Scopes:   r.scopes,
		Expiry:   exp,
		IssuedAt: iat,
		ID:       c.ID,
		JKT:      jkt,
		Claims:   payload,
	}
	return nil
}
