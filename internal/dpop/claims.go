package dpop

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"math"
	"strings"
	"time"
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
	// iat and hasIAT are IAT as decodeClaims returns it (no allocation).
	iat    float64
	hasIAT bool
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
func (v *Verifier) checkClaims(payload []byte, req Request, htu string) (checkedClaims, error) {
	var w wireClaims
	if err := decodeClaims(payload, &w); err != nil {
		return checkedClaims{}, fail(ErrMalformedProof, "payload is not a JSON object of the expected shape")
	}
	switch {
	case w.JTI == "":
		return checkedClaims{}, fail(ErrMissingClaim, "jti")
	case w.HTM == "":
		return checkedClaims{}, fail(ErrMissingClaim, "htm")
	case w.HTU == "":
		return checkedClaims{}, fail(ErrMissingClaim, "htu")
	case !w.hasIAT:
		return checkedClaims{}, fail(ErrMissingClaim, "iat")
	}
	if w.HTM != req.Method {
		return checkedClaims{}, fail(ErrHTMMismatch, "")
	}
	if strings.ContainsAny(w.HTU, "?#") {
		return checkedClaims{}, fail(ErrHTUMismatch, "htu has a query or fragment")
	}
	if w.HTU != htu {
		got, err := NormalizeHTU(w.HTU)
		if err != nil || got != htu {
			return checkedClaims{}, fail(ErrHTUMismatch, "")
		}
	}
	iat, err := v.checkIAT(w.iat)
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
