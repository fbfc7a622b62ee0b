package resource

import (
	"context"
	"errors"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// verifyJWT validates an RFC 9068 JWT access token (RS-10): the cheap
// checks (shape, algorithm, type, issuer, audience, times) first, so that
// a token that fails them never makes a key source fetch; then the key
// lookup by "kid" and the signature. Header members jku, x5u, x5c and jwk
// are never used to find a key (RFC 8725 §3.10).
//
// A token with "cnf" passes only with the DPoP scheme (and DPoP enabled);
// its "cnf"."jkt" goes to TokenInfo.JKT for the proof check.
func (v *Verifier) verifyJWT(ctx context.Context, raw string, now time.Time, av *authValue, scheme string) error {
	jws, err := jose.ParseSignedCompact(raw, v.joseAlgs)
	if err != nil {
		var ua *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &ua) {
			return errAlgorithm
		}
		return errMalformedToken
	}
	if len(jws.Signatures) != 1 {
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
		return errIssuer // RS-09: exact match with a configured issuer
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
		ClientID: c.ClientID,
		Audience: c.Audience[:len(c.Audience):len(c.Audience)],
		Scopes:   scopes,
		Expiry:   exp,
		IssuedAt: iat,
		ID:       c.ID,
		JKT:      jkt,
		Claims:   payload,
	}
	return nil
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
	return checkEncodedPayload(h)
}

// checkEncodedPayload refuses the unencoded payload option (RFC 7797).
func checkEncodedPayload(h *jose.Header) error {
	if _, ok := h.ExtraHeaders["b64"]; ok {
		return errMalformedToken
	}
	return nil
}

// verifySignature finds the keys for kid and checks the signature with
// the candidates among them (jwa.Candidates: at most four, each fitting
// alg).
func verifySignature(ctx context.Context, jws *jose.JSONWebSignature, src keyset.Source, kid, alg string) error {
	keys, err := src.Keys(ctx, kid)
	switch {
	case err == nil:
	case errors.Is(err, keyset.ErrUnknownKey):
		return errors.Join(ErrUnknownKey, err)
	case errors.Is(err, remotekeys.ErrClosed):
		return errVerifierClosed
	case errors.Is(err, ErrInvalidToken), errors.Is(err, ErrUnavailable):
		return err // a refusal of this package, from a caller's source
	case ctx.Err() != nil:
		return errKeysUnavailable
	default:
		return errors.Join(errKeysUnavailable, err)
	}
	tried := false
	for k := range jwa.Candidates(keys, kid, alg) {
		tried = true
		if _, err := jws.Verify(k.Public); err == nil {
			return nil
		}
	}
	if !tried {
		return ErrUnknownKey
	}
	return errSignature
}
