package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestDPoPAlgorithmChoice: the proof algorithm is one both the
// authorization server (RFC 9449 §5.1) and the resource (§7.1 challenge
// "algs", else RFC 9728 metadata) accept; a resource that requires DPoP
// never leads to a Bearer token.
func TestDPoPAlgorithmChoice(t *testing.T) {
	t.Parallel()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}
	tests := []struct {
		name     string
		cfg      *DPoPConfig // nil: no DPoP
		asAlgs   []string
		prmAlgs  []string
		prmReq   bool
		header   string // WWW-Authenticate of the 401
		wantAlg  string // "" means Bearer (no key)
		wantErr  error
		wantJWK  bool // the key is generated and stored with the token
		wantReqd bool
	}{
		{name: "generated: ES256 preferred", cfg: &DPoPConfig{}, asAlgs: all, prmAlgs: all, wantAlg: "ES256", wantJWK: true},
		{name: "generated: EdDSA second", cfg: &DPoPConfig{}, asAlgs: []string{"EdDSA", "ES384"}, prmAlgs: []string{"ES384", "EdDSA"}, wantAlg: "EdDSA", wantJWK: true},
		{name: "generated: first common alg", cfg: &DPoPConfig{}, asAlgs: []string{"ES512", "PS256"}, prmAlgs: []string{"PS256"}, wantAlg: "PS256", wantJWK: true},
		{name: "generated: challenge algs win over metadata", cfg: &DPoPConfig{}, asAlgs: all, prmAlgs: []string{"ES256"},
			header: `DPoP algs="ES384"`, wantAlg: "ES384", wantJWK: true, wantReqd: true},
		{name: "generated: lists absent accept anything", cfg: &DPoPConfig{}, wantAlg: "ES256", wantJWK: true},
		{name: "generated: configured algorithm only", cfg: &DPoPConfig{Algorithm: "ES512"}, asAlgs: all, wantAlg: "ES512", wantJWK: true},
		{name: "configured key in both lists", cfg: &DPoPConfig{Key: p384}, asAlgs: all, prmAlgs: all, wantAlg: "ES384"},
		{name: "configured Ed25519 key", cfg: &DPoPConfig{Key: ed}, asAlgs: all, header: `Bearer, DPoP algs="EdDSA"`, wantAlg: "EdDSA"},
		{name: "configured key the resource refuses, Bearer allowed", cfg: &DPoPConfig{Key: p384}, asAlgs: all, prmAlgs: []string{"ES256"},
			header: `Bearer, DPoP algs="ES256"`},
		{name: "configured key the authorization server refuses, DPoP required", cfg: &DPoPConfig{Key: p384}, asAlgs: []string{"ES256"},
			prmReq: true, wantErr: errDPoPUnsupported},
		{name: "configured key the resource refuses, DPoP-only challenge", cfg: &DPoPConfig{Key: p384}, asAlgs: all,
			header: `DPoP algs="ES256 EdDSA"`, wantErr: errDPoPUnsupported},
		{name: "no common alg, DPoP required", cfg: &DPoPConfig{}, asAlgs: []string{"ES256"}, prmAlgs: []string{"EdDSA"}, prmReq: true,
			wantErr: errDPoPUnsupported},
		{name: "no common alg, Bearer allowed", cfg: &DPoPConfig{}, asAlgs: []string{"ES256"}, prmAlgs: []string{"EdDSA"}},
		{name: "authorization server without DPoP, DPoP required", cfg: &DPoPConfig{}, prmReq: true, wantErr: errDPoPUnsupported},
		{name: "authorization server without DPoP, Bearer allowed", cfg: &DPoPConfig{}, wantAlg: "ES256", wantJWK: true},
		{name: "no DPoP configuration, DPoP required", asAlgs: all, header: `DPoP algs="ES256"`, wantErr: errDPoPUnsupported},
		{name: "no DPoP configuration, Bearer allowed", asAlgs: all, header: `Bearer, DPoP algs="ES256"`},
		{name: "required by metadata", cfg: &DPoPConfig{}, asAlgs: all, prmReq: true, header: `Bearer, DPoP`, wantAlg: "ES256", wantJWK: true, wantReqd: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{Authorizer: &FollowRedirects{}, DPoP: tt.cfg})
			if err != nil {
				t.Fatal(err)
			}
			d := &tokenstore.Discovery{
				Resource: "https://mcp.example.com/mcp", Issuer: "https://as.example.com",
				AuthServer:                    &oauthmeta.AuthServerMetadata{Issuer: "https://as.example.com", DPoPSigningAlgValuesSupported: tt.asAlgs},
				DPoPSigningAlgValuesSupported: tt.prmAlgs, DPoPBoundAccessTokensRequired: tt.prmReq,
			}
			h := http.Header{}
			if tt.header != "" {
				h.Set("WWW-Authenticate", tt.header)
			}
			k, err := c.planDPoP(context.Background(), d, parseChallenge(h))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			switch {
			case tt.wantAlg == "" && k != nil:
				t.Fatalf("key %s, want Bearer", k.p.Algorithm())
			case tt.wantAlg == "":
				return
			case k == nil:
				t.Fatalf("no key, want %s", tt.wantAlg)
			case k.p.Algorithm() != tt.wantAlg || (k.jwk != nil) != tt.wantJWK || k.required != (tt.wantReqd || tt.prmReq):
				t.Fatalf("key %s stored %v required %v, want %s %v %v", k.p.Algorithm(), k.jwk != nil, k.required, tt.wantAlg, tt.wantJWK, tt.wantReqd)
			}
			if tt.wantJWK {
				p, err := parseStoredKey(k.jwk, nil)
				if err != nil || p.JKT() != k.p.JKT() || p.Algorithm() != tt.wantAlg {
					t.Fatalf("stored key does not round-trip: %v", err)
				}
			}
		})
	}
}

// TestDPoPStoredKey: a DPoP-bound token is usable only with its key: the
// configured one, or the generated one stored with it; a stored key that
// is public, malformed or of another thumbprint is not used.
func TestDPoPStoredKey(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Authorizer: &FollowRedirects{}, DPoP: &DPoPConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.dpop.generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.dpop.generate("EdDSA")
	if err != nil {
		t.Fatal(err)
	}
	tok := func(jkt string, jwk []byte) *tokenstore.Token {
		t := &tokenstore.Token{DPoPJKT: jkt, DPoPKey: jwk}
		t.AccessToken, t.TokenType = "a", dpop.TokenType
		return t
	}
	tests := []struct {
		name   string
		tok    *tokenstore.Token
		usable bool
	}{
		{"its stored key", tok(k.p.JKT(), k.jwk), true},
		{"no stored key", tok(k.p.JKT(), nil), false},
		{"another key's thumbprint", tok(other.p.JKT(), k.jwk), false},
		{"malformed key", tok(k.p.JKT(), []byte(`{"kty":"EC"}`)), false},
		{"public key only", tok(k.p.JKT(), []byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"EdDSA"}`)), false},
		{"Bearer token", &tokenstore.Token{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A client of its own: a key once parsed is kept by its
			// thumbprint, which would answer for the other cases.
			c, err := New(Config{Authorizer: &FollowRedirects{}, DPoP: &DPoPConfig{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.tokenUsable(tt.tok); got != tt.usable {
				t.Fatalf("usable = %v, want %v", got, tt.usable)
			}
		})
	}
}
