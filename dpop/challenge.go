package dpop

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Scheme is the authorization scheme of DPoP-bound access tokens
// ("Authorization: DPoP <token>") and of their challenges (RFC 9449 §7.1).
const Scheme = "DPoP"

// HeaderName is the request header that carries the proof (RFC 9449 §4.1).
const HeaderName = "DPoP"

// headerKey is HeaderName in the canonical form of http.Header keys
// (textproto.CanonicalMIMEHeaderKey("DPoP")).
const headerKey = "Dpop"

// TokenType is the "token_type" of a DPoP-bound token response (RFC 9449
// §5).
const TokenType = "DPoP"

// Challenge returns the WWW-Authenticate challenge of the DPoP scheme (RFC
// 9449 §7.1), formatted by [oauthmeta.Challenge.String]. Its parameters, in
// order:
//
//   - "error" and "error_description" from err ([OAuthError]) when err is
//     non-nil; leave err nil when the request carried no credentials (RFC
//     6750 §3.1);
//   - extra, as given (realm, scope, resource_metadata, ...);
//   - "algs", the space-separated accepted algorithms, when algs is not
//     empty (pass [Verifier.Algorithms]).
//
// Errors with code temporarily_unavailable (ErrReplayCheckUnavailable) are a
// server condition: answer 503 without a challenge. For use_dpop_nonce
// errors also send a fresh nonce in the [NonceHeader] response header (RFC
// 9449 §9).
func Challenge(algs []string, err error, extra ...oauthmeta.Param) oauthmeta.Challenge {
	c := oauthmeta.Challenge{Scheme: Scheme}
	if oe := OAuthError(err); oe != nil {
		c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamError, Value: string(oe.Code)})
		if oe.Description != "" {
			c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamErrorDescription, Value: oe.Description})
		}
	}
	c.Params = append(c.Params, extra...)
	if len(algs) > 0 {
		c.Params = append(c.Params, oauthmeta.Param{Name: oauthmeta.ParamAlgs, Value: strings.Join(algs, " ")})
	}
	return c
}

// ProofFromHeader returns the single DPoP proof of a request (RFC 9449 §4.3
// check 1). It fails with [ErrMissingProof] when there is none (or it is
// empty) and with [ErrMultipleProofs] when the header field appears more
// than once or holds a comma-separated list. It reads h[headerKey]
// directly, so h must have canonical keys, as every http.Header built by
// net/http or through Header.Set/Add has; a key set by assignment in
// another spelling ("DPoP") is not seen.
func ProofFromHeader(h http.Header) (string, error) {
	vals := h[headerKey]
	switch {
	case len(vals) == 0:
		return "", fail(ErrMissingProof, "")
	case len(vals) > 1:
		return "", fail(ErrMultipleProofs, "")
	}
	v := strings.TrimSpace(vals[0])
	if v == "" {
		return "", fail(ErrMissingProof, "")
	}
	if strings.Contains(v, ",") {
		return "", fail(ErrMultipleProofs, "")
	}
	return v, nil
}

// IsNonceError reports whether err asks the client to retry with a
// server-provided nonce (code use_dpop_nonce).
func IsNonceError(err error) bool {
	return errors.Is(err, ErrNonceRequired) || errors.Is(err, ErrNonceInvalid)
}
