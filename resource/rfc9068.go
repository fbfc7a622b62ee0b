package resource

import (
	"context"
	"errors"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxKeyTries bounds how many candidate keys one token may be checked
// against (a token without "kid" against a large key set).
const maxKeyTries = 4

// tokenShape records whether a token's JWS compact shape is already known,
// so that a token is scanned for it once per request.
type tokenShape uint8

const (
	shapeUnchecked tokenShape = iota // not scanned yet
	shapeJWS                         // looksLikeJWT holds
	shapeOther                       // looksLikeJWT does not hold
)

// isJWS reports looksLikeJWT(raw), scanning raw only when s is unchecked.
func (s tokenShape) isJWS(raw string) bool {
	if s == shapeUnchecked {
		return looksLikeJWT(raw)
	}
	return s == shapeJWS
}

// looksLikeJWT reports whether raw has the JWS compact shape: three
// base64url segments, the first two non-empty (an empty signature still
// goes the JWT way, to be refused as alg "none").
func looksLikeJWT(raw string) bool {
	i := strings.IndexByte(raw, '.')
	if i <= 0 {
		return false
	}
	j := strings.IndexByte(raw[i+1:], '.')
	if j <= 0 {
		return false
	}
	j += i + 1
	return strings.IndexByte(raw[j+1:], '.') < 0 &&
		allIn(raw[:i], base64URLTable) && allIn(raw[i+1:j], base64URLTable) && allIn(raw[j+1:], base64URLTable)
}

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
			return ErrAlgorithm
		}
		return ErrMalformedToken
	}
	if len(jws.Signatures) != 1 {
		return ErrMalformedToken
	}
	h := jws.Signatures[0].Protected
	if err := v.checkHeader(&h); err != nil {
		return err
	}
	payload := jws.UnsafePayloadWithoutVerification()
	c, err := decodeClaimsInto(payload, &av.aud1)
	if err != nil {
		return ErrMalformedToken
	}
	iss, ok := v.issuers[c.iss]
	if !ok {
		return ErrIssuer // RS-09: exact match with a configured issuer
	}
	cs := claimSet{issuer: c.iss, audience: c.aud, bound: c.cnf != nil}
	if c.hasExp {
		cs.exp = &c.exp
	}
	if c.hasNbf {
		cs.nbf = &c.nbf
	}
	if c.hasIat {
		cs.iat = &c.iat
	}
	exp, iat, err := v.checkClaims(&cs, now, v.dpop != nil && scheme == schemeDPoP)
	if err != nil {
		return err
	}
	scopes, ok := parseScope(c.scope, av.scopes[:])
	if !ok {
		return ErrMalformedToken
	}
	var jkt string
	if cs.bound {
		if jkt, err = confirmationJKT(c.cnf); err != nil {
			return err
		}
	}
	if err := verifySignature(ctx, jws, iss.keys, h.KeyID, h.Algorithm); err != nil {
		return err
	}
	av.bound = cs.bound
	*av.info = TokenInfo{
		Scheme:   schemeFor(jkt),
		Issuer:   c.iss,
		Subject:  c.sub,
		ClientID: c.clientID,
		Audience: c.aud,
		Scopes:   scopes,
		Expiry:   exp,
		IssuedAt: iat,
		ID:       c.jti,
		JKT:      jkt,
		Claims:   payload,
	}
	return nil
}

// confirmationJKT returns "jkt" of a raw "cnf" claim (RFC 7800 §3.1, RFC
// 9449 §6.1): "" for a confirmation by other means (such as mTLS's
// "x5t#S256"), an error if cnf is not an object or jkt not a string.
func confirmationJKT(cnf []byte) (string, error) {
	var c oauthmeta.Confirmation
	if err := jsonx.DecodeObject(cnf, &c); err != nil {
		return "", ErrMalformedToken
	}
	return c.JKT, nil
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
// payload option.
func (v *Verifier) checkHeader(h *jose.Header) error {
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	switch {
	case strings.EqualFold(typ, "at+jwt"), strings.EqualFold(typ, "application/at+jwt"):
	case v.allowJWTType && strings.EqualFold(typ, "JWT"):
	default:
		return ErrTokenType
	}
	if _, ok := h.ExtraHeaders["b64"]; ok {
		return ErrMalformedToken
	}
	return nil
}

// verifySignature finds the keys for kid and checks the signature with
// those whose type fits alg.
func verifySignature(ctx context.Context, jws *jose.JSONWebSignature, src KeySource, kid, alg string) error {
	keys, err := src.Keys(ctx, kid)
	if err != nil {
		switch {
		case errors.Is(err, ErrInvalidToken), errors.Is(err, ErrUnavailable):
			return err
		case ctx.Err() != nil:
			return ErrKeysUnavailable
		default:
			return errors.Join(ErrKeysUnavailable, err)
		}
	}
	tried := 0
	for _, k := range keys {
		if !keyFits(k, alg) {
			continue
		}
		if tried++; tried > maxKeyTries {
			break
		}
		if _, err := jws.Verify(k.Public); err == nil {
			return nil
		}
	}
	if tried == 0 {
		return ErrUnknownKey
	}
	return ErrSignature
}
