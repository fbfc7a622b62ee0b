package dpop

import (
	"crypto"
	"encoding/json"
	"errors"
	"slices"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// proofHeader is a validated proof header: everything Verify needs from the
// first segment of a proof, derived from it alone.
type proofHeader struct {
	alg string
	key crypto.PublicKey
	jkt string
	// sig is go-jose's parse of this exact protected header.
	sig jose.Signature
}

// verifySignature checks the signature of a proof whose first segment is
// this header's: go-jose verifies it over (header, payload) with the
// embedded key, for every proof, whether the header was cached or not.
func (h *proofHeader) verifySignature(payload, signature []byte) error {
	s := h.sig
	s.Signature = signature
	obj := jose.JSONWebSignature{Signatures: []jose.Signature{s}}
	if err := obj.DetachedVerify(payload, h.key); err != nil {
		return fail(ErrBadSignature, "")
	}
	return nil
}

// rawHeader is the strict view of a proof header used to name the failed
// check precisely before go-jose parses it.
type rawHeader struct {
	Typ  *string        `json:"typ"`
	Alg  *string        `json:"alg"`
	JWK  map[string]any `json:"jwk"`
	Crit any            `json:"crit"`
	B64  any            `json:"b64"`
}

// parseHeader validates the header of proof (whose first segment is seg)
// and returns it; the signature is not checked yet.
func (v *Verifier) parseHeader(proof, seg string) (*proofHeader, error) {
	data, err := v.b64.DecodeString(seg)
	if err != nil {
		return nil, fail(ErrMalformedProof, "header is not base64url")
	}
	var rh rawHeader
	if err := jsonx.DecodeObject(data, &rh); err != nil {
		return nil, fail(ErrMalformedProof, "header is not a JSON object")
	}
	if err := v.checkRawHeader(&rh); err != nil {
		return nil, err
	}
	obj, err := jose.ParseSignedCompact(proof, v.joseAlgs)
	if err != nil {
		if jwkErr := checkJWKParses(rh.JWK); jwkErr != nil {
			return nil, jwkErr
		}
		return nil, fail(ErrMalformedProof, "not a compact JWS")
	}
	sig := obj.Signatures[0]
	jwk := sig.Protected.JSONWebKey
	if jwk == nil || !jwk.Valid() || !jwk.IsPublic() {
		return nil, fail(errInvalidJWK, "")
	}
	alg := *rh.Alg
	switch err := jwa.CheckKey(jwk.Key, alg); {
	case errors.Is(err, jwa.ErrKeyMismatch): // RFC 8725 §3.1
		return nil, fail(errAlgKeyMismatch, "")
	case err != nil: // a weak or unsupported key
		return nil, fail(errInvalidJWK, "")
	}
	jkt, err := JKT(jwk.Key)
	if err != nil {
		return nil, fail(errInvalidJWK, "no thumbprint")
	}
	return &proofHeader{alg: alg, key: jwk.Key, jkt: jkt, sig: sig}, nil
}

// checkRawHeader applies the RFC 9449 §4.3 header checks 4, 5 and 7.
func (v *Verifier) checkRawHeader(rh *rawHeader) error {
	if rh.Typ == nil || !jwtverify.TypeIs(*rh.Typ, proofType) {
		return fail(errWrongType, "")
	}
	if rh.Alg == nil || !slices.Contains(v.algs, *rh.Alg) {
		return fail(ErrAlgNotAllowed, "")
	}
	if rh.Crit != nil || rh.B64 != nil {
		return fail(ErrMalformedProof, "crit and b64 are not allowed")
	}
	if rh.JWK == nil {
		return fail(errMissingJWK, "")
	}
	if _, ok := jwa.SecretMember(rh.JWK); ok {
		return fail(errPrivateJWK, "")
	}
	if a, ok := rh.JWK["alg"]; ok && a != *rh.Alg {
		return fail(errAlgKeyMismatch, "jwk alg differs")
	}
	return nil
}

// checkJWKParses tells a bad key from a bad JWS after go-jose refused a
// proof whose header passed checkRawHeader.
func checkJWKParses(jwk map[string]any) error {
	data, err := json.Marshal(jwk)
	if err != nil {
		return fail(errInvalidJWK, "")
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(data); err != nil {
		return fail(errInvalidJWK, "")
	}
	return nil
}
