package jwtassert_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// t0 returns the fixed "now" of the tests.
func t0() time.Time { return time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC) }

// clock is a settable test clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(t0().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// fixedKey returns a deterministic P-256 key.
func fixedKey(t testing.TB, seed byte) *ecdsa.PrivateKey {
	t.Helper()
	d := make([]byte, 32)
	for i := range d {
		d[i] = seed
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// must returns k, panicking on err: for key generation in test setup.
func must[K any](k K, err error) K {
	if err != nil {
		panic(err)
	}
	return k
}

// absent marks a header parameter or claim to delete.
type absent struct{}

func apply(m, over map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, v := range over {
		if _, del := v.(absent); del {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// jwkMap returns the JSON object of a public JWK.
func jwkMap(t testing.TB, key any) map[string]any {
	t.Helper()
	data, err := jose.JSONWebKey{Key: key}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func b64json(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// signRaw builds a compact JWS by hand with any header and claims. key is a
// private key, an HMAC secret ([]byte), or nil for an empty signature. The
// signature primitive follows header["alg"].
func signRaw(t testing.TB, key any, header map[string]any, claims any) string {
	t.Helper()
	input := b64json(t, header) + "." + b64json(t, claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch k := key.(type) {
	case nil:
	case []byte:
		m := hmac.New(sha256.New, k)
		m.Write([]byte(input))
		sig = m.Sum(nil)
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	case *rsa.PrivateKey:
		if header["alg"] == "PS256" {
			sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, digest[:], nil)
		} else {
			sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, digest[:])
		}
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(input))
	default:
		t.Fatalf("signRaw: unsupported key %T", key)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}
