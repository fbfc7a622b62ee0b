package dpop

import (
	"crypto/subtle"
	"math"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/jsonx"
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

// maxUnixSeconds bounds a NumericDate the checks convert (year 3000).
const maxUnixSeconds = 32503680000

// checkClaims decodes the payload and applies RFC 9449 §4.3 checks 3, 8, 9,
// 11 and the "ath" half of 12. htu is the normalized request URL.
func (v *Verifier) checkClaims(payload []byte, req Request, htu string) (*checkedClaims, error) {
	var w wireClaims
	if err := jsonx.DecodeObject(payload, &w); err != nil {
		return nil, fail(ErrMalformedProof, "payload is not a JSON object of the expected shape")
	}
	switch {
	case w.JTI == "":
		return nil, fail(ErrMissingClaim, "jti")
	case w.HTM == "":
		return nil, fail(ErrMissingClaim, "htm")
	case w.HTU == "":
		return nil, fail(ErrMissingClaim, "htu")
	case w.IAT == nil:
		return nil, fail(ErrMissingClaim, "iat")
	}
	if w.HTM != req.Method {
		return nil, fail(ErrHTMMismatch, "")
	}
	if strings.ContainsAny(w.HTU, "?#") {
		return nil, fail(ErrHTUMismatch, "htu has a query or fragment")
	}
	if w.HTU != htu {
		got, err := NormalizeHTU(w.HTU)
		if err != nil || got != htu {
			return nil, fail(ErrHTUMismatch, "")
		}
	}
	iat, err := v.checkIAT(*w.IAT)
	if err != nil {
		return nil, err
	}
	if err := checkATH(w.ATH, req.AccessToken); err != nil {
		return nil, err
	}
	return &checkedClaims{jti: w.JTI, htu: w.HTU, nonce: w.Nonce, iat: iat}, nil
}

// checkIAT applies the acceptance window to "iat" (seconds since the epoch,
// possibly fractional) and returns it as a time.
func (v *Verifier) checkIAT(iat float64) (time.Time, error) {
	now := v.clock()
	nowSec := float64(now.UnixNano()) / 1e9
	if math.IsNaN(iat) || iat < nowSec-v.window.Seconds() {
		return time.Time{}, fail(ErrStaleProof, "")
	}
	if iat > nowSec+v.leeway.Seconds() || iat > maxUnixSeconds {
		return time.Time{}, fail(ErrFutureProof, "")
	}
	sec, frac := math.Modf(iat)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// checkATH enforces "ath present iff an access token is presented, and then
// equal to its hash" (RFC 9449 §4.3 check 12).
func checkATH(ath, accessToken string) error {
	if accessToken == "" {
		if ath != "" {
			return fail(ErrUnexpectedATH, "")
		}
		return nil
	}
	if ath == "" {
		return fail(ErrMissingClaim, "ath")
	}
	if subtle.ConstantTimeCompare([]byte(ath), []byte(AccessTokenHash(accessToken))) != 1 {
		return fail(ErrATHMismatch, "")
	}
	return nil
}
