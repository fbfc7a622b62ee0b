package oauthtest

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"slices"
	"strings"
	"testing"
)

// JWKSCase is one row of the JWK Set table that every consumer of a peer's
// JWK Set runs: the parser itself (internal/jwkset), the resource server's
// static and remote key sets, the assertion verifier (internal/jwtassert),
// the authorization server's client keys, inline ("jwks") and fetched
// ("jwks_uri"), and the Client ID Metadata Document rule (package
// clientmeta). One table keeps the rule identical everywhere.
type JWKSCase struct {
	// Name describes the row.
	Name string
	// JWKS is the JWK Set document.
	JWKS []byte
	// Signer signs the token or assertion the consumer is asked to verify;
	// its "kid" and "alg" are the ones JWKS names it by.
	Signer *Key
	// WantIDs are the key IDs the parser returns, in order; nil when the
	// set is refused.
	WantIDs []string
	// Refused means the whole set is refused.
	Refused bool
	// Unusable marks a refused set that is still a well-formed JWK Set of
	// public keys, refused only for the parser's limits (size, number of
	// members) or because no member is a usable verification key. A Client
	// ID Metadata Document may carry it (package clientmeta does not parse
	// keys); the parser and every verifier refuse it.
	Unusable bool
}

// Verifies reports whether a consumer must accept a token signed by
// Signer: the set is accepted and Signer's key is among its usable keys.
func (c JWKSCase) Verifies() bool { return !c.Refused && slices.Contains(c.WantIDs, c.Signer.ID) }

// JWKSCases returns the shared JWK Set table, with fresh keys. Every key
// the signers use is 2048-bit RSA (PS256), P-256 (ES256) or Ed25519 (EdDSA).
func JWKSCases(t testing.TB) []JWKSCase {
	t.Helper()
	ec := NewKey(t, ES256, "ec")
	rs := NewKey(t, PS256, "rsa")
	ed := NewKey(t, EdDSA, "ed")
	dup1, dup2 := NewKey(t, ES256, "dup"), NewKey(t, ES256, "dup")
	enc := NewKey(t, ES256, "enc")
	weak := &Key{ID: "weak", Algorithm: RS256, Signer: Must(rsa.GenerateKey(rand.Reader, 1024))}

	pub := func(k *Key, over map[string]any) map[string]any {
		m := Apply(JWKMap(t, k.Public()), map[string]any{"kid": k.ID, "alg": k.Algorithm, "use": "sig"})
		return Apply(m, over)
	}
	priv := func(k *Key) map[string]any {
		return Apply(JWKMap(t, k.Signer), map[string]any{"kid": k.ID, "alg": k.Algorithm, "use": "sig"})
	}
	set := func(members ...any) []byte {
		data, err := json.Marshal(map[string]any{"keys": members})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	good := set(pub(ec, nil), pub(rs, nil), pub(ed, nil))
	rsaPub := JWKMap(t, rs.Public())
	x25519 := Must(ecdh.X25519().GenerateKey(rand.Reader))
	b64 := base64.RawURLEncoding.EncodeToString
	offCurve := pub(ec, map[string]any{"y": b64(new(big.Int).Add(ec.Signer.(*ecdsa.PrivateKey).Y, big.NewInt(1)).FillBytes(make([]byte, 32)))})
	p384 := Apply(JWKMap(t, Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)).Public()), map[string]any{"kid": "p384"})
	hundredOne := make([]any, 101)
	for i := range hundredOne {
		hundredOne[i] = pub(ec, nil)
	}

	return []JWKSCase{
		{Name: "public EC, RSA and OKP keys", JWKS: good, Signer: ec, WantIDs: []string{"ec", "rsa", "ed"}},
		{Name: "public RSA key signs", JWKS: good, Signer: rs, WantIDs: []string{"ec", "rsa", "ed"}},
		{Name: "public OKP key signs", JWKS: good, Signer: ed, WantIDs: []string{"ec", "rsa", "ed"}},
		{Name: "members without use or alg", JWKS: set(Apply(pub(ec, nil), map[string]any{"use": Absent{}, "alg": Absent{}})),
			Signer: ec, WantIDs: []string{"ec"}},
		{Name: "key_ops with verify", JWKS: set(pub(ec, map[string]any{"key_ops": []string{"verify"}})), Signer: ec, WantIDs: []string{"ec"}},

		{Name: "private EC key", JWKS: set(priv(ec)), Signer: ec, Refused: true},
		{Name: "private RSA key", JWKS: set(priv(rs)), Signer: rs, Refused: true},
		{Name: "private OKP key", JWKS: set(priv(ed)), Signer: ed, Refused: true},
		{Name: "mixed set with one private key", JWKS: set(pub(ec, nil), priv(rs)), Signer: ec, Refused: true},
		{Name: "RSA key with only a prime", JWKS: set(pub(ec, nil), Apply(pub(rs, nil), map[string]any{"p": rsaPub["n"]})), Signer: ec, Refused: true},
		{Name: "symmetric key", JWKS: set(map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0c2VjcmV0c2VjcmV0"}), Signer: ec, Refused: true},
		{Name: "symmetric key beside a public key", JWKS: set(pub(ec, nil), map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0c2VjcmV0c2VjcmV0"}),
			Signer: ec, Refused: true},
		{Name: "oct key without k", JWKS: set(pub(ec, nil), map[string]any{"kty": "oct", "kid": "hmac"}), Signer: ec, Refused: true},

		{Name: "empty set", JWKS: []byte(`{"keys":[]}`), Signer: ec, Refused: true, Unusable: true},
		{Name: "no keys member", JWKS: []byte(`{}`), Signer: ec, Refused: true},
		{Name: "keys member in another case", JWKS: []byte(strings.Replace(string(good), `"keys"`, `"Keys"`, 1)), Signer: ec, Refused: true},
		{Name: "keys not an array", JWKS: []byte(`{"keys":{}}`), Signer: ec, Refused: true},
		{Name: "member not an object", JWKS: set(pub(ec, nil), "key"), Signer: ec, Refused: true},
		{Name: "malformed JSON", JWKS: good[:len(good)-1], Signer: ec, Refused: true},
		{Name: "trailing data", JWKS: append(slices.Clone(good), []byte(` {}`)...), Signer: ec, Refused: true},
		{Name: "array document", JWKS: []byte(`[` + string(good) + `]`), Signer: ec, Refused: true},
		{Name: "duplicate keys member", JWKS: []byte(`{"keys":[],` + string(good[1:])), Signer: ec, Refused: true},
		{Name: "duplicate member inside a key", JWKS: []byte(strings.Replace(string(good), `"kid":"ec"`, `"kid":"ec","kid":"ec"`, 1)),
			Signer: ec, Refused: true},
		{Name: "oversized", JWKS: []byte(strings.Replace(string(good), `{"keys"`, `{"pad":"`+strings.Repeat("a", 64<<10)+`","keys"`, 1)),
			Signer: ec, Refused: true, Unusable: true},
		{Name: "more than 100 keys", JWKS: set(hundredOne...), Signer: ec, Refused: true, Unusable: true},
		{Name: "only unusable keys", JWKS: set(pub(enc, map[string]any{"use": "enc"})), Signer: enc, Refused: true, Unusable: true},

		{Name: "duplicate kid keeps both", JWKS: set(pub(dup1, nil), pub(dup2, nil)), Signer: dup2, WantIDs: []string{"dup", "dup"}},
		{Name: "encryption key skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"use": "enc"})), Signer: enc, WantIDs: []string{"ec"}},
		{Name: "key_ops without verify skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"key_ops": []string{"encrypt"}})),
			Signer: enc, WantIDs: []string{"ec"}},
		{Name: "alg that does not fit the key skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"alg": "ES384"})), Signer: enc,
			WantIDs: []string{"ec"}},
		{Name: "symmetric alg skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"alg": "HS256"})), Signer: enc, WantIDs: []string{"ec"}},
		{Name: "alg none skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"alg": "none"})), Signer: enc, WantIDs: []string{"ec"}},
		{Name: "RSA under 2048 bits skipped", JWKS: set(pub(ec, nil), pub(weak, nil)), Signer: weak, WantIDs: []string{"ec"}},
		{Name: "unknown kty skipped", JWKS: set(map[string]any{"kty": "XYZ", "kid": "x"}, pub(ec, nil)), Signer: ec, WantIDs: []string{"ec"}},
		{Name: "unknown crv skipped", JWKS: set(pub(ec, nil), pub(enc, map[string]any{"crv": "P-192"})), Signer: enc, WantIDs: []string{"ec"}},
		{Name: "X25519 key skipped", JWKS: set(pub(ec, nil), map[string]any{"kty": "OKP", "crv": "X25519", "kid": "x", "x": b64(x25519.PublicKey().Bytes())}),
			Signer: ec, WantIDs: []string{"ec"}},
		{Name: "point off the curve skipped", JWKS: set(offCurve, Apply(p384, nil)), Signer: ec, WantIDs: []string{"p384"}},
		{Name: "malformed member skipped", JWKS: set(pub(ec, map[string]any{"x": "!!"}), pub(rs, nil)), Signer: ec, WantIDs: []string{"rsa"}},
	}
}
