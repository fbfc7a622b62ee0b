package dpop

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"math"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// wireClaims is the strict view of a proof payload. Empty strings count as
// missing.
type wireClaims struct {
	JTI   string   `json:"jti"`
	HTM   string   `json:"htm"`
	HTU   string   `json:"htu"`
	IAT   *float64 `json:"iat"`
	ATH   string   `json:"ath"`
	Nonce string   `json:"nonce"`
}

// checkedClaims are the claims Verify goes on with.
type checkedClaims struct {
	jti, htu, nonce string
	iat             time.Time
}

// checkClaims decodes the payload and applies RFC 9449 §4.3 checks 3, 8, 9,
// 11 and the "ath" half of 12. htu is the normalized request URL.
func (v *Verifier) checkClaims(payload []byte, req Request, htu string) (checkedClaims, error) {
	var w wireClaims
	if err := jwtverify.DecodeClaims(payload, &w); err != nil {
		return checkedClaims{}, fail(ErrMalformedProof, "payload is not a JSON object of the expected shape")
	}
	switch {
	case w.JTI == "":
		return checkedClaims{}, fail(errMissingClaim, "jti")
	case w.HTM == "":
		return checkedClaims{}, fail(errMissingClaim, "htm")
	case w.HTU == "":
		return checkedClaims{}, fail(errMissingClaim, "htu")
	case w.IAT == nil:
		return checkedClaims{}, fail(errMissingClaim, "iat")
	}
	if w.HTM != req.Method {
		return checkedClaims{}, fail(ErrHTMMismatch, "")
	}
	if strings.ContainsAny(w.HTU, "?#") {
		return checkedClaims{}, fail(ErrHTUMismatch, "htu has a query or fragment")
	}
	if w.HTU != htu {
		got, err := normalizeHTU(w.HTU)
		if err != nil || got != htu {
			return checkedClaims{}, fail(ErrHTUMismatch, "")
		}
	}
	iat, err := v.checkIAT(*w.IAT)
	if err != nil {
		return checkedClaims{}, err
	}
	if err := checkATH(w.ATH, req.AccessToken); err != nil {
		return checkedClaims{}, err
	}
	return checkedClaims{jti: w.JTI, htu: w.HTU, nonce: w.Nonce, iat: iat}, nil
}

// checkIAT applies the acceptance window to "iat" (seconds since the epoch,
// possibly fractional) and returns it as a time.
func (v *Verifier) checkIAT(iat float64) (time.Time, error) {
	now := v.now.Now()
	nowSec := float64(now.UnixNano()) / 1e9
	if math.IsNaN(iat) || iat < nowSec-v.window.Seconds() {
		return time.Time{}, fail(ErrStaleProof, "")
	}
	t, ok := jwtverify.NumericDate(iat)
	if !ok || iat > nowSec+v.leeway.Seconds() {
		return time.Time{}, fail(ErrFutureProof, "")
	}
	return t, nil
}

// checkATH enforces "ath present iff an access token is presented, and then
// equal to its hash" (RFC 9449 §4.3 check 12).
func checkATH(ath, accessToken string) error {
	if accessToken == "" {
		if ath != "" {
			return fail(errUnexpectedATH, "")
		}
		return nil
	}
	if ath == "" {
		return fail(errMissingClaim, "ath")
	}
	// The expected value is built on the stack: no allocation per proof.
	var want [athLen]byte
	sum := sha256.Sum256([]byte(accessToken))
	base64.RawURLEncoding.Encode(want[:], sum[:])
	if subtle.ConstantTimeCompare([]byte(ath), want[:]) != 1 {
		return fail(ErrATHMismatch, "")
	}
	return nil
}

// athLen is the length of an "ath" value: base64url of a SHA-256 hash.
const athLen = 43
