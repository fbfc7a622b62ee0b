package oauthtest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"io"
	"maps"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// Hand-built JWS helpers, for tests that need tokens and proofs no
// well-behaved library would produce: any header, any claims, any alg.

// FixedP256 returns a deterministic P-256 key whose scalar is seed
// repeated 32 times (seed must not be 0).
func FixedP256(t testing.TB, seed byte) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), bytes.Repeat([]byte{seed}, 32))
	if err != nil {
		t.Fatalf("oauthtest: fixed key: %v", err)
	}
	return k
}

// Must returns v, panicking on err: for key generation in test setup.
func Must[V any](v V, err error) V {
	if err != nil {
		panic(err)
	}
	return v
}

// OpaqueSigner hides the concrete key type of Signer, like an HSM- or
// KMS-backed crypto.Signer.
type OpaqueSigner struct{ Signer crypto.Signer }

// Public returns the public key.
func (o OpaqueSigner) Public() crypto.PublicKey { return o.Signer.Public() }

// Sign signs with the wrapped key.
func (o OpaqueSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.Signer.Sign(r, digest, opts)
}

// Absent, as a value in the over map of [Apply], deletes the member.
type Absent struct{}

// Apply returns a copy of m with the members of over set, or deleted where
// their value is Absent{}.
func Apply(m, over map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, v := range over {
		if _, del := v.(Absent); del {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// JWKMap returns the JSON object of the JWK for key (public or private).
func JWKMap(t testing.TB, key any) map[string]any {
	t.Helper()
	data, err := jose.JSONWebKey{Key: key}.MarshalJSON()
	if err != nil {
		t.Fatalf("oauthtest: marshal JWK: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// B64JSON returns the base64url (unpadded) JSON encoding of v.
func B64JSON(t testing.TB, v any) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString(MustJSON(t, v))
}

// DecodeJWS returns the decoded header and claims of a compact JWS; the
// signature is not checked.
func DecodeJWS(t testing.TB, jws string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("oauthtest: JWS has %d segments, want 3", len(parts))
	}
	var out [2]map[string]any
	for i := range out {
		data, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("oauthtest: JWS segment %d: %v", i, err)
		}
		if err := json.Unmarshal(data, &out[i]); err != nil {
			t.Fatalf("oauthtest: JWS segment %d: %v", i, err)
		}
	}
	return out[0], out[1]
}

// SignRaw builds a compact JWS by hand with any header and claims. key is
// a private key (ECDSA: the hash follows the curve size; RSA: PSS when
// header["alg"] starts with "PS", PKCS #1 v1.5 otherwise, SHA-256;
// Ed25519), an HMAC-SHA-256 secret ([]byte), or nil for an empty
// signature. header["alg"] is otherwise not consulted, so a test can sign
// with a primitive its header lies about.
func SignRaw(t testing.TB, key any, header map[string]any, claims any) string {
	t.Helper()
	input := B64JSON(t, header) + "." + B64JSON(t, claims)
	var (
		sig []byte
		err error
	)
	switch k := key.(type) {
	case nil:
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case *ecdsa.PrivateKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		var h hash.Hash
		switch {
		case size <= 32:
			h = sha256.New()
		case size <= 48:
			h = sha512.New384()
		default:
			h = sha512.New()
		}
		h.Write([]byte(input))
		r, s, serr := ecdsa.Sign(rand.Reader, k, h.Sum(nil))
		err = serr
		if err == nil {
			sig = append(r.FillBytes(make([]byte, size)), s.FillBytes(make([]byte, size))...)
		}
	case *rsa.PrivateKey:
		digest := sha256.Sum256([]byte(input))
		if alg, _ := header["alg"].(string); strings.HasPrefix(alg, "PS") {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, digest[:], nil)
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(input))
	default:
		t.Fatalf("oauthtest: SignRaw: unsupported key %T", key)
	}
	if err != nil {
		t.Fatalf("oauthtest: SignRaw: %v", err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}
