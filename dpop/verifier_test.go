package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	testURL   = "https://mcp.example.com/mcp"
	testToken = "eyJhbGciOiJFUzI1NiJ9.access-token.sig"
)

// env is one verifier and one client key.
type env struct {
	t   testing.TB
	clk *oauthtest.Clock
	key *ecdsa.PrivateKey
	v   *dpop.Verifier
}

func newEnv(t *testing.T, mod func(*dpop.VerifierConfig)) *env {
	t.Helper()
	clk := oauthtest.NewClock(t0())
	cfg := dpop.VerifierConfig{Now: clk.Now}
	if mod != nil {
		mod(&cfg)
	}
	v, err := dpop.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clk: clk, key: oauthtest.FixedP256(t, 7), v: v}
}

func (e *env) header(over map[string]any) map[string]any {
	h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": oauthtest.JWKMap(e.t, &e.key.PublicKey)}
	return oauthtest.Apply(h, over)
}

func (e *env) claims(over map[string]any) map[string]any {
	c := map[string]any{
		"jti": "jti-" + strings.Repeat("x", 8) + time.Now().String(),
		"htm": "POST",
		"htu": testURL,
		"iat": e.clk.Now().Unix(),
		"ath": dpop.AccessTokenHash(testToken),
	}
	return oauthtest.Apply(c, over)
}

// proof signs claims under header with the env key.
func (e *env) proof(hdr, claims map[string]any) string {
	return oauthtest.SignRaw(e.t, e.key, e.header(hdr), e.claims(claims))
}

func resourceReq() dpop.Request {
	return dpop.Request{Method: "POST", URL: testURL, AccessToken: testToken}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	weakRSA := oauthtest.Must(rsa.GenerateKey(rand.Reader, 1024))
	p384 := oauthtest.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader))
	other := oauthtest.FixedP256(t, 9)
	allowRSA := func(c *dpop.VerifierConfig) { c.Algorithms = []string{"ES256", "RS256"} }

	tests := []struct {
		name     string
		cfg      func(*dpop.VerifierConfig)
		proof    func(e *env) string
		req      func() dpop.Request
		wantErr  error
		wantCode oauthmeta.ErrorCode
	}{
		{name: "empty proof", proof: func(e *env) string { return "" }, wantErr: dpop.ErrMissingProof},
		{name: "oversized proof", cfg: func(c *dpop.VerifierConfig) { c.MaxProofSize = 100 },
			proof: func(e *env) string { return e.proof(nil, nil) }, wantErr: dpop.ErrProofTooLarge},
		{name: "not a JWS", proof: func(e *env) string { return "not-a-jwt" }, wantErr: dpop.ErrMalformedProof},
		{name: "JWE shape", proof: func(e *env) string { return "a.b.c.d.e" }, wantErr: dpop.ErrMalformedProof},
		{name: "two proofs joined", proof: func(e *env) string { return e.proof(nil, nil) + ", " + e.proof(nil, nil) },
			wantErr: dpop.ErrMalformedProof},
		{name: "header not JSON", proof: func(e *env) string { return "bm90IGpzb24.e30.c2ln" }, wantErr: dpop.ErrMalformedProof},
		{name: "typ missing (RFC 9449 §4.3 check 4)", proof: func(e *env) string { return e.proof(map[string]any{"typ": oauthtest.Absent{}}, nil) },
			wantErr: dpop.ErrWrongType},
		{name: "typ JWT", proof: func(e *env) string { return e.proof(map[string]any{"typ": "JWT"}, nil) }, wantErr: dpop.ErrWrongType},
		{name: "typ at+jwt", proof: func(e *env) string { return e.proof(map[string]any{"typ": "at+jwt"}, nil) }, wantErr: dpop.ErrWrongType},
		{name: "alg none (RS-10, §4.3 check 5)", proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, nil, e.header(map[string]any{"alg": "none"}), e.claims(nil))
		}, wantErr: dpop.ErrAlgNotAllowed},
		{name: "alg HS256 with symmetric key", proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, []byte("0123456789abcdef0123456789abcdef"), e.header(map[string]any{"alg": "HS256"}), e.claims(nil))
		}, wantErr: dpop.ErrAlgNotAllowed},
		{name: "alg missing", proof: func(e *env) string { return e.proof(map[string]any{"alg": oauthtest.Absent{}}, nil) }, wantErr: dpop.ErrAlgNotAllowed},
		{name: "RS384 outside a configured allowlist", cfg: allowRSA, proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, rsaKey, e.header(map[string]any{"alg": "RS384", "jwk": oauthtest.JWKMap(e.t, &rsaKey.PublicKey)}), e.claims(nil))
		}, wantErr: dpop.ErrAlgNotAllowed},
		{name: "jwk missing", proof: func(e *env) string { return e.proof(map[string]any{"jwk": oauthtest.Absent{}}, nil) }, wantErr: dpop.ErrMissingJWK},
		{name: "private key in jwk (§4.3 check 7)", proof: func(e *env) string {
			return e.proof(map[string]any{"jwk": oauthtest.JWKMap(e.t, e.key)}, nil)
		}, wantErr: dpop.ErrPrivateJWK},
		{name: "RSA prime in jwk without d", cfg: allowRSA, proof: func(e *env) string {
			j := oauthtest.JWKMap(e.t, &rsaKey.PublicKey)
			j["p"] = "AQAB"
			return oauthtest.SignRaw(e.t, rsaKey, e.header(map[string]any{"alg": "RS256", "jwk": j}), e.claims(nil))
		}, wantErr: dpop.ErrPrivateJWK},
		{name: "symmetric jwk", proof: func(e *env) string {
			return e.proof(map[string]any{"jwk": map[string]any{"kty": "oct", "k": "c2VjcmV0"}}, nil)
		}, wantErr: dpop.ErrPrivateJWK},
		{name: "jwk point not on curve", proof: func(e *env) string {
			j := oauthtest.JWKMap(e.t, &e.key.PublicKey)
			j["y"] = j["x"]
			return e.proof(map[string]any{"jwk": j}, nil)
		}, wantErr: dpop.ErrInvalidJWK},
		{name: "jwk unknown kty", proof: func(e *env) string {
			return e.proof(map[string]any{"jwk": map[string]any{"kty": "XYZ"}}, nil)
		}, wantErr: dpop.ErrInvalidJWK},
		{name: "RSA key under 2048 bits", cfg: allowRSA, proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, weakRSA, e.header(map[string]any{"alg": "RS256", "jwk": oauthtest.JWKMap(e.t, &weakRSA.PublicKey)}), e.claims(nil))
		}, wantErr: dpop.ErrInvalidJWK},
		{name: "ES256 with a P-384 key", proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, p384, e.header(map[string]any{"jwk": oauthtest.JWKMap(e.t, &p384.PublicKey)}), e.claims(nil))
		}, wantErr: dpop.ErrAlgKeyMismatch},
		{name: "ES256 with an RSA key", cfg: allowRSA, proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, rsaKey, e.header(map[string]any{"jwk": oauthtest.JWKMap(e.t, &rsaKey.PublicKey)}), e.claims(nil))
		}, wantErr: dpop.ErrAlgKeyMismatch},
		{name: "jwk alg member differs", proof: func(e *env) string {
			j := oauthtest.JWKMap(e.t, &e.key.PublicKey)
			j["alg"] = "ES384"
			return e.proof(map[string]any{"jwk": j}, nil)
		}, wantErr: dpop.ErrAlgKeyMismatch},
		{name: "crit header", proof: func(e *env) string { return e.proof(map[string]any{"crit": []string{"exp"}}, nil) },
			wantErr: dpop.ErrMalformedProof},
		{name: "signed by another key (§4.3 check 6)", proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, other, e.header(nil), e.claims(nil))
		}, wantErr: dpop.ErrBadSignature},
		{name: "tampered signature", proof: func(e *env) string {
			p := e.proof(nil, nil)
			return p[:len(p)-10] + "AAAAAAAAAA"
		}, wantErr: dpop.ErrBadSignature},
		{name: "jti missing (§4.3 check 3)", proof: func(e *env) string { return e.proof(nil, map[string]any{"jti": oauthtest.Absent{}}) },
			wantErr: dpop.ErrMissingClaim},
		{name: "jti empty", proof: func(e *env) string { return e.proof(nil, map[string]any{"jti": ""}) }, wantErr: dpop.ErrMissingClaim},
		{name: "htm missing", proof: func(e *env) string { return e.proof(nil, map[string]any{"htm": oauthtest.Absent{}}) }, wantErr: dpop.ErrMissingClaim},
		{name: "htu missing", proof: func(e *env) string { return e.proof(nil, map[string]any{"htu": oauthtest.Absent{}}) }, wantErr: dpop.ErrMissingClaim},
		{name: "iat missing", proof: func(e *env) string { return e.proof(nil, map[string]any{"iat": oauthtest.Absent{}}) }, wantErr: dpop.ErrMissingClaim},
		{name: "iat not a number", proof: func(e *env) string { return e.proof(nil, map[string]any{"iat": "1785240000"}) },
			wantErr: dpop.ErrMalformedProof},
		{name: "payload not an object", proof: func(e *env) string {
			return oauthtest.SignRaw(e.t, e.key, e.header(nil), []string{"jti"})
		}, wantErr: dpop.ErrMalformedProof},
		{name: "proof for another method (§4.3 check 8)", proof: func(e *env) string { return e.proof(nil, map[string]any{"htm": "GET"}) },
			wantErr: dpop.ErrHTMMismatch},
		{name: "method compared case-sensitively", proof: func(e *env) string { return e.proof(nil, map[string]any{"htm": "post"}) },
			wantErr: dpop.ErrHTMMismatch},
		{name: "proof for another URL (§4.3 check 9)", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"htu": "https://other.example.com/mcp"})
		}, wantErr: dpop.ErrHTUMismatch},
		{name: "proof for another path", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"htu": "https://mcp.example.com/mcp/"})
		}, wantErr: dpop.ErrHTUMismatch},
		{name: "proof for another scheme", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"htu": "http://mcp.example.com/mcp"})
		}, wantErr: dpop.ErrHTUMismatch},
		{name: "htu with query (§4.2)", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"htu": testURL + "?a=b"})
		}, wantErr: dpop.ErrHTUMismatch},
		{name: "htu with fragment", proof: func(e *env) string { return e.proof(nil, map[string]any{"htu": testURL + "#f"}) },
			wantErr: dpop.ErrHTUMismatch},
		{name: "htu not a URL", proof: func(e *env) string { return e.proof(nil, map[string]any{"htu": "mcp"}) },
			wantErr: dpop.ErrHTUMismatch},
		{name: "expired iat (§4.3 check 11)", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"iat": e.clk.Now().Add(-dpop.DefaultIATWindow - time.Second).Unix()})
		}, wantErr: dpop.ErrStaleProof},
		{name: "future iat", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"iat": e.clk.Now().Add(dpop.DefaultLeeway + time.Second).Unix()})
		}, wantErr: dpop.ErrFutureProof},
		{name: "short window", cfg: func(c *dpop.VerifierConfig) { c.IATWindow = 10 * time.Second }, proof: func(e *env) string {
			return e.proof(nil, map[string]any{"iat": e.clk.Now().Add(-11 * time.Second).Unix()})
		}, wantErr: dpop.ErrStaleProof},
		{name: "huge iat", proof: func(e *env) string { return e.proof(nil, map[string]any{"iat": 1e300}) }, wantErr: dpop.ErrFutureProof},
		{name: "negative iat", proof: func(e *env) string { return e.proof(nil, map[string]any{"iat": -1}) }, wantErr: dpop.ErrStaleProof},
		{name: "wrong ath (§4.3 check 12)", proof: func(e *env) string {
			return e.proof(nil, map[string]any{"ath": dpop.AccessTokenHash("another-token")})
		}, wantErr: dpop.ErrATHMismatch},
		{name: "ath missing with a token", proof: func(e *env) string { return e.proof(nil, map[string]any{"ath": oauthtest.Absent{}}) },
			wantErr: dpop.ErrMissingClaim},
		{name: "ath without a token", proof: func(e *env) string { return e.proof(nil, nil) },
			req: func() dpop.Request { return dpop.Request{Method: "POST", URL: testURL} }, wantErr: dpop.ErrUnexpectedATH},
		{name: "nonce missing when required (§9)", cfg: withNonces, proof: func(e *env) string { return e.proof(nil, nil) },
			wantErr: dpop.ErrNonceRequired, wantCode: oauthmeta.CodeUseDPoPNonce},
		{name: "forged nonce", cfg: withNonces, proof: func(e *env) string {
			return e.proof(nil, map[string]any{"nonce": strings.Repeat("A", 32)})
		}, wantErr: dpop.ErrNonceInvalid, wantCode: oauthmeta.CodeUseDPoPNonce},
		{name: "per-request nonce missing", proof: func(e *env) string { return e.proof(nil, nil) },
			req: func() dpop.Request { r := resourceReq(); r.Nonce = "n-1"; return r }, wantErr: dpop.ErrNonceRequired,
			wantCode: oauthmeta.CodeUseDPoPNonce},
		{name: "per-request nonce differs", proof: func(e *env) string { return e.proof(nil, map[string]any{"nonce": "n-0"}) },
			req: func() dpop.Request { r := resourceReq(); r.Nonce = "n-1"; return r }, wantErr: dpop.ErrNonceInvalid,
			wantCode: oauthmeta.CodeUseDPoPNonce},
		{name: "request method not a token", proof: func(e *env) string { return e.proof(nil, nil) },
			req: func() dpop.Request { r := resourceReq(); r.Method = "PO ST"; return r }, wantErr: dpop.ErrInvalidRequest,
			wantCode: oauthmeta.CodeInvalidRequest},
		{name: "request URL relative", proof: func(e *env) string { return e.proof(nil, nil) },
			req: func() dpop.Request { r := resourceReq(); r.URL = "/mcp"; return r }, wantErr: dpop.ErrInvalidRequest,
			wantCode: oauthmeta.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.cfg)
			req := resourceReq()
			if tt.req != nil {
				req = tt.req()
			}
			p, err := e.v.Verify(context.Background(), tt.proof(e), req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
			if p != nil {
				t.Fatal("Verify returned a proof with an error")
			}
			code := tt.wantCode
			if code == "" {
				code = oauthmeta.CodeInvalidDPoPProof
			}
			if !errors.Is(err, &oauthmeta.Error{Code: code}) {
				t.Fatalf("error %v does not carry code %s", err, code)
			}
			// RS-24: no token in error text or descriptions.
			if strings.Contains(err.Error(), testToken) || strings.Contains(dpop.OAuthError(err).Description, testToken) {
				t.Fatal("error text leaks the access token")
			}
		})
	}
}

func withNonces(c *dpop.VerifierConfig) {
	n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: []byte(strings.Repeat("k", 32)), Now: c.Now})
	if err != nil {
		panic(err)
	}
	c.Nonces = n
}

func TestVerifyAccepts(t *testing.T) {
	t.Parallel()
	rsaKey := oauthtest.Must(rsa.GenerateKey(rand.Reader, 2048))
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		key   func() any
		alg   string
		typ   string // "" for dpop+jwt
		req   dpop.Request
		claim map[string]any
	}{
		{name: "ES256 resource request", alg: "ES256"},
		{name: "ES384", alg: "ES384", key: func() any { return oauthtest.Must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)) }},
		{name: "ES512", alg: "ES512", key: func() any { return oauthtest.Must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader)) }},
		{name: "RS256", alg: "RS256", key: func() any { return rsaKey }},
		{name: "PS256", alg: "PS256", key: func() any { return rsaKey }},
		{name: "EdDSA", alg: "EdDSA", key: func() any { return edKey }},
		{name: "token request without ath", alg: "ES256", req: dpop.Request{Method: "POST", URL: "https://as.example.com/token"},
			claim: map[string]any{"htu": "https://as.example.com/token", "ath": oauthtest.Absent{}}},
		{name: "htu differs only by normalization", alg: "ES256",
			claim: map[string]any{"htu": "HTTPS://MCP.Example.COM:443/%6Dcp"}},
		{name: "request URL with query and fragment", alg: "ES256",
			req: dpop.Request{Method: "POST", URL: testURL + "?x=1#frag", AccessToken: testToken}},
		{name: "typ with application/ prefix", alg: "ES256", typ: "application/dpop+jwt"},
		{name: "typ in another case", alg: "ES256", typ: "Application/DPoP+JWT"},
		{name: "fractional iat", alg: "ES256", claim: map[string]any{"iat": float64(t0().Unix()) - 0.5}},
		{name: "iat at the edge of the window", alg: "ES256", claim: map[string]any{"iat": t0().Add(-dpop.DefaultIATWindow).Unix()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *dpop.VerifierConfig) {
				c.Algorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}
			})
			var key any = e.key
			if tt.key != nil {
				key = tt.key()
			}
			req := tt.req
			if req.Method == "" {
				req = resourceReq()
			}
			hdr := map[string]any{"alg": tt.alg, "jwk": oauthtest.JWKMap(t, publicOf(key))}
			if tt.typ != "" {
				hdr["typ"] = tt.typ
			}
			proof := oauthtest.SignRaw(t, key, e.header(hdr), e.claims(tt.claim))
			p, err := e.v.Verify(context.Background(), proof, req)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			want, err := dpop.JKT(publicOf(key))
			if err != nil {
				t.Fatal(err)
			}
			if p.JKT != want || p.Algorithm != tt.alg || p.HTM != req.Method {
				t.Fatalf("proof = %+v, want jkt %s alg %s", p, want, tt.alg)
			}
			if err := p.CheckBinding(want); err != nil {
				t.Fatalf("CheckBinding(own jkt): %v", err)
			}
		})
	}
}

func publicOf(key any) any {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		return &k.PublicKey
	case *rsa.PrivateKey:
		return &k.PublicKey
	case ed25519.PrivateKey:
		return k.Public()
	}
	return nil
}
