package oauthtest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"maps"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// AccessToken describes the claims of an RFC 9068 §2.2 JWT access token.
// Zero fields are left out of the payload, so a test can build a token that
// lacks any claim.
type AccessToken struct {
	Issuer    string
	Subject   string
	Audience  []string // one member encodes as a string
	ClientID  string
	Scope     string
	ID        string // "jti"
	IssuedAt  time.Time
	NotBefore time.Time
	Expiry    time.Time
	// Extra claims are added last and override the ones above.
	Extra map[string]any
}

// Claims returns the payload as a JSON object.
func (a AccessToken) Claims() map[string]any {
	c := map[string]any{}
	put := func(name, v string) {
		if v != "" {
			c[name] = v
		}
	}
	put("iss", a.Issuer)
	put("sub", a.Subject)
	put("client_id", a.ClientID)
	put("scope", a.Scope)
	put("jti", a.ID)
	switch len(a.Audience) {
	case 0:
	case 1:
		c["aud"] = a.Audience[0]
	default:
		c["aud"] = a.Audience
	}
	for name, t := range map[string]time.Time{"iat": a.IssuedAt, "nbf": a.NotBefore, "exp": a.Expiry} {
		if !t.IsZero() {
			c[name] = t.Unix()
		}
	}
	maps.Copy(c, a.Extra)
	return c
}

// Header describes the JOSE header of a minted token. The zero value gives
// typ "at+jwt" and the key's "kid".
type Header struct {
	// Type is "typ". Empty means "at+jwt"; use OmitType to leave it out.
	Type     string
	OmitType bool
	// KeyID overrides the key's ID; OmitKeyID leaves "kid" out.
	KeyID     string
	OmitKeyID bool
	// EmbedJWK puts the signing key's public JWK in a "jwk" header.
	EmbedJWK bool
	// Extra headers, such as "jku" or "x5u".
	Extra map[string]any
}

// Mint signs tok with k and returns the compact JWS.
func (k *Key) Mint(t testing.TB, tok AccessToken) string {
	t.Helper()
	return k.MintWith(t, Header{}, tok)
}

// MintWith signs tok with k under header h.
func (k *Key) MintWith(t testing.TB, h Header, tok AccessToken) string {
	t.Helper()
	return k.Sign(t, h, MustJSON(t, tok.Claims()))
}

// Sign signs an arbitrary payload (which need not be JSON) with k under
// header h, for tokens whose payload a struct cannot express, such as
// duplicate member names.
func (k *Key) Sign(t testing.TB, h Header, payload []byte) string {
	t.Helper()
	h.KeyID = cmp.Or(h.KeyID, k.ID)
	return signJWS(t, jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Algorithm), Key: k.Signer}, h, payload)
}

// HMAC signs payload with HS256 under secret, the shape of an algorithm
// confusion attack when secret is a public key's PEM (RFC 8725 §2.1). An
// empty h.KeyID leaves "kid" out.
func HMAC(t testing.TB, secret []byte, h Header, payload []byte) string {
	t.Helper()
	h.OmitKeyID = h.OmitKeyID || h.KeyID == ""
	return signJWS(t, jose.SigningKey{Algorithm: jose.HS256, Key: secret}, h, payload)
}

func signJWS(t testing.TB, key jose.SigningKey, h Header, payload []byte) string {
	t.Helper()
	opts := &jose.SignerOptions{EmbedJWK: h.EmbedJWK}
	if !h.OmitType {
		opts.WithType(jose.ContentType(cmp.Or(h.Type, "at+jwt")))
	}
	if !h.OmitKeyID && !h.EmbedJWK {
		opts.WithHeader(jose.HeaderKey("kid"), h.KeyID)
	}
	for name, v := range h.Extra {
		opts.WithHeader(jose.HeaderKey(name), v)
	}
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatalf("oauthtest: signer: %v", err)
	}
	return compact(t, signer, payload)
}

// Unsigned returns an alg "none" token with the given header members
// (alg is forced to "none") and payload, and an empty signature.
func Unsigned(t testing.TB, header map[string]any, payload []byte) string {
	t.Helper()
	h := Apply(map[string]any{}, header)
	h["alg"] = "none"
	return B64JSON(t, h) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
}

// MustJSON marshals v or fails the test.
func MustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("oauthtest: marshal: %v", err)
	}
	return b
}

func compact(t testing.TB, signer jose.Signer, payload []byte) string {
	t.Helper()
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatalf("oauthtest: sign: %v", err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatalf("oauthtest: serialize: %v", err)
	}
	return s
}
