package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"math/big"

	"github.com/mcpauth/mcpauth/internal/jwtassert/jwa"
)

// verifySignature checks a JWS signature over signingInput (the first two
// proof segments and the dot between them, exactly as received) for an
// (alg, key) pair that go-jose has already parsed, validated and used to
// verify an earlier proof with the same protected header.
//
// It makes the same call go-jose's verifiers make (go-jose v4
// asymmetric.go, verifyPayload): for ES* the fixed-size R||S signature of
// RFC 7518 §3.4 with crypto/ecdsa.Verify, for RS* crypto/rsa.VerifyPKCS1v15,
// for PS* crypto/rsa.VerifyPSS with default options, for EdDSA
// crypto/ed25519.Verify. TestVerifySignatureMatchesGoJose and
// FuzzVerifySignatureMatchesGoJose hold it to go-jose's answers.
//
// It exists for speed: go-jose's DetachedVerify re-decodes the protected
// header JSON and re-encodes both segments on every call, about 9% of an
// ES256 verification, which alone would break the budget of one signature
// verification plus 10% per proof (see bench_test.go).
func verifySignature(alg string, key crypto.PublicKey, signingInput string, sig []byte) bool {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		return verifyECDSA(alg, k, signingInput, sig)
	case *rsa.PublicKey:
		h, ok := rsaHash(alg)
		if !ok {
			return false
		}
		digest := hashString(h, signingInput)
		switch alg {
		case RS256, RS384, RS512:
			return rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		case PS256, PS384, PS512:
			return rsa.VerifyPSS(k, h, digest, sig, nil) == nil
		}
	case ed25519.PublicKey:
		return alg == EdDSA && len(k) == ed25519.PublicKeySize && ed25519.Verify(k, []byte(signingInput), sig)
	}
	return false
}

func verifyECDSA(alg string, k *ecdsa.PublicKey, signingInput string, sig []byte) bool {
	var h crypto.Hash
	var size int
	switch alg {
	case ES256:
		h, size = crypto.SHA256, 32
	case ES384:
		h, size = crypto.SHA384, 48
	case ES512:
		h, size = crypto.SHA512, 66
	default:
		return false
	}
	if k.Curve != jwa.Curve(alg) || len(sig) != 2*size {
		return false
	}
	r := new(big.Int).SetBytes(sig[:size])
	s := new(big.Int).SetBytes(sig[size:])
	return ecdsa.Verify(k, hashString(h, signingInput), r, s)
}

func rsaHash(alg string) (crypto.Hash, bool) {
	switch alg {
	case RS256, PS256:
		return crypto.SHA256, true
	case RS384, PS384:
		return crypto.SHA384, true
	case RS512, PS512:
		return crypto.SHA512, true
	}
	return 0, false
}

func hashString(h crypto.Hash, s string) []byte {
	if h == crypto.SHA256 {
		sum := sha256.Sum256([]byte(s))
		return sum[:]
	}
	d := h.New()
	d.Write([]byte(s))
	return d.Sum(nil)
}
