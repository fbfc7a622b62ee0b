package authserver

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	svcID     = "svc-app"
	svcSecret = "svc-secret-0123456789abcdef"
)

// withService adds a confidential client_credentials client and applies
// the DPoP configuration d (nil: DPoP off).
func withService(d *DPoPConfig) func(*Config) {
	return func(c *Config) {
		c.Clients = append(c.Clients, Client{ID: svcID, Name: "Service", Secret: svcSecret,
			GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}})
		c.DPoP = d
	}
}

// newProver returns a client DPoP key on the harness clock.
// boundTokens runs a code flow of the public client and redeems the code
// with a proof of p, for tokens bound to p's key.
func (h *harness) boundTokens(p *dpop.Prover) tokenResult {
	h.t.Helper()
	q, v := authParams(publicID, publicCB)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v}, "client_id": {publicID},
		"redirect_uri": {publicCB}}
	return h.tokenHeader(form, "", "", h.proofHeader(p))
}

func (h *harness) newProver() *dpop.Prover {
	h.t.Helper()
	p, err := dpop.NewProver(dpop.ProverConfig{Now: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// proofHeader returns a DPoP header with a fresh proof of p for the token
// endpoint.
func (h *harness) proofHeader(p *dpop.Prover) http.Header {
	h.t.Helper()
	proof, err := p.Proof(dpop.Request{Method: http.MethodPost, URL: h.url(pathToken)})
	if err != nil {
		h.t.Fatal(err)
	}
	return http.Header{"Dpop": {proof}}
}

// wantBound checks a DPoP-bound token response: token_type DPoP and the
// access token's cnf.jkt naming the proof key (RFC 9449 §5, §6.1).
func wantBound(t *testing.T, h *harness, res tokenResult, jkt string) {
	t.Helper()
	if res.status != http.StatusOK {
		t.Fatalf("token: %d %s", res.status, res.body)
	}
	if res.tok.TokenType != dpop.TokenType {
		t.Fatalf("token_type = %q, want %q", res.tok.TokenType, dpop.TokenType)
	}
	_, claims := h.verifyJWT(res.tok.AccessToken)
	cnf, _ := claims["cnf"].(map[string]any)
	if cnf == nil || cnf["jkt"] != jkt {
		t.Fatalf("cnf = %v, want jkt %s", claims["cnf"], jkt)
	}
}

// TestDPoPTokenEndpoint covers DPoP at the token endpoint (RFC 9449 §5):
// DPoPConfig.Required and DPoP-bound client_credentials tokens (AS-10
// client authentication first, then the proof).
func TestDPoPTokenEndpoint(t *testing.T) {
	t.Parallel()
	cc := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "scope": {"mcp:read"}}
	tests := []struct {
		name    string
		cfg     *DPoPConfig
		proof   bool
		wantErr oauthmeta.ErrorCode // "" means a token is issued
		bound   bool
	}{
		{name: "Required refuses client_credentials without a proof", cfg: &DPoPConfig{Required: true},
			wantErr: oauthmeta.CodeInvalidDPoPProof},
		{name: "Required accepts client_credentials with a proof", cfg: &DPoPConfig{Required: true}, proof: true, bound: true},
		{name: "client_credentials with a proof is DPoP-bound", cfg: &DPoPConfig{}, proof: true, bound: true},
		{name: "client_credentials without a proof is Bearer", cfg: &DPoPConfig{}},
		{name: "DPoP off (nil) ignores the proof", proof: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", withService(tt.cfg))
			p := h.newProver()
			var hdr http.Header
			if tt.proof {
				hdr = h.proofHeader(p)
			}
			res := h.tokenHeader(cc, svcID, svcSecret, hdr)
			switch {
			case tt.wantErr != "":
				wantError(t, res, http.StatusBadRequest, tt.wantErr)
			case tt.bound:
				wantBound(t, h, res, p.JKT())
			default:
				if res.status != http.StatusOK || res.tok.TokenType != "Bearer" {
					t.Fatalf("token: %d %s", res.status, res.body)
				}
				if _, claims := h.verifyJWT(res.tok.AccessToken); claims["cnf"] != nil {
					t.Fatalf("unbound token carries cnf %v", claims["cnf"])
				}
			}
		})
	}
}

// TestDPoPRequiredCodeExchange: with DPoPConfig.Required a code exchange
// without a proof is refused with invalid_dpop_proof, and the code is not
// consumed: the retry with a proof gets a bound token.
func TestDPoPRequiredCodeExchange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", withService(&DPoPConfig{Required: true}))
	q, v := authParams(publicID, publicCB)
	code := h.code(q, v)
	wantError(t, h.exchange(code, v, publicCB, nil), http.StatusBadRequest, oauthmeta.CodeInvalidDPoPProof)
	p := h.newProver()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {v}, "client_id": {publicID},
		"redirect_uri": {publicCB}}
	wantBound(t, h, h.tokenHeader(form, "", "", h.proofHeader(p)), p.JKT())
}

// TestDPoPRefreshOtherKey (AS-12, RFC 9449 §5): a public client's refresh
// token is bound to its DPoP key. Proofs of another key (a thief holding
// the refresh token) are refused with invalid_grant, checked before the
// proof's jti is recorded (so they consume no replay-store entry); they
// neither rotate nor revoke the token, and
// the owner still refreshes.
func TestDPoPRefreshOtherKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	owner := h.newProver()
	first := h.boundTokens(owner)
	wantBound(t, h, first, owner.JKT())
	rt := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.tok.RefreshToken}, "client_id": {publicID}}
	thief := h.newProver()
	for range 10 {
		wantError(t, h.tokenHeader(rt, "", "", h.proofHeader(thief)), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	}
	// The same thief proof sent again is refused for its key, never as a
	// replay: its jti was not recorded.
	same := h.proofHeader(thief)
	for range 3 {
		wantError(t, h.tokenHeader(rt, "", "", same), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	}
	wantError(t, h.tokenHeader(rt, "", "", nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	wantBound(t, h, h.tokenHeader(rt, "", "", h.proofHeader(owner)), owner.JKT())
}

// TestDPoPRefreshWithoutProof (AS-12, RFC 9449 §5): a refresh token bound
// to a DPoP key presented without any proof is refused with invalid_grant
// and a description that says a proof is required (not "another key"),
// whether proofs are optional or required at the token endpoint; the
// token is neither rotated nor revoked, and the owner still refreshes.
func TestDPoPRefreshWithoutProof(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      *DPoPConfig
		proof    bool // a proof of another key instead of none
		wantDesc string
	}{
		{"optional DPoP, no proof", &DPoPConfig{}, false, "DPoP proof required: this refresh token is bound to a DPoP key"},
		{"required DPoP, no proof", &DPoPConfig{Required: true}, false, "DPoP proof required: this refresh token is bound to a DPoP key"},
		{"optional DPoP, another key", &DPoPConfig{}, true, "refresh token is bound to another DPoP key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", func(c *Config) { c.DPoP = tt.cfg })
			owner := h.newProver()
			first := h.boundTokens(owner)
			wantBound(t, h, first, owner.JKT())
			rt := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.tok.RefreshToken}, "client_id": {publicID}}
			var hdr http.Header
			if tt.proof {
				hdr = h.proofHeader(h.newProver())
			}
			res := h.tokenHeader(rt, "", "", hdr)
			wantError(t, res, http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
			if res.err.Description != tt.wantDesc {
				t.Fatalf("error_description %q, want %q", res.err.Description, tt.wantDesc)
			}
			wantBound(t, h, h.tokenHeader(rt, "", "", h.proofHeader(owner)), owner.JKT())
		})
	}
}

// TestDPoPKnownBinding: the binding looked up before the proof is checked
// is the grant's key, and nothing for another client's or an unknown
// refresh token.
func TestDPoPKnownBinding(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	owner := h.newProver()
	rt := h.boundTokens(owner).tok.RefreshToken
	pub := &Client{ID: publicID}
	tests := []struct {
		name   string
		gt     string
		client *Client
		rt     string
		want   string
	}{
		{"bound refresh token", oauthmeta.GrantTypeRefreshToken, pub, rt, owner.JKT()},
		{"another client's refresh token", oauthmeta.GrantTypeRefreshToken, &Client{ID: basicID}, rt, ""},
		{"unknown refresh token", oauthmeta.GrantTypeRefreshToken, pub, "nope", ""},
		{"no refresh token", oauthmeta.GrantTypeRefreshToken, pub, "", ""},
		{"other grant type", oauthmeta.GrantTypeClientCredentials, pub, rt, ""},
		{"no client", oauthmeta.GrantTypeRefreshToken, nil, rt, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := h.as.token.knownBinding(t.Context(), tt.gt, tt.client, url.Values{"refresh_token": {tt.rt}})
			if got != tt.want {
				t.Fatalf("knownBinding = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDPoPCheckerConfig: DPoPConfig embeds dpop.VerifierConfig with one
// meaning per field; nonces are on with NonceKey, Nonces or RequireNonce,
// and the server's clock is the only clock.
func TestDPoPCheckerConfig(t *testing.T) {
	t.Parallel()
	key := make([]byte, 32)
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	tests := []struct {
		name       string
		cfg        DPoPConfig
		wantErr    bool
		wantNonces bool
	}{
		{name: "zero value: proofs optional, no nonces"},
		{name: "NonceKey turns nonces on", cfg: DPoPConfig{VerifierConfig: dpop.VerifierConfig{NonceKey: key}}, wantNonces: true},
		{name: "RequireNonce draws a key", cfg: DPoPConfig{RequireNonce: true}, wantNonces: true},
		{name: "NoncePeriod without a key", cfg: DPoPConfig{VerifierConfig: dpop.VerifierConfig{NoncePeriod: time.Minute}}, wantErr: true},
		{name: "short NonceKey", cfg: DPoPConfig{VerifierConfig: dpop.VerifierConfig{NonceKey: []byte("short")}}, wantErr: true},
		{name: "a clock of its own", cfg: DPoPConfig{VerifierConfig: dpop.VerifierConfig{Now: time.Now}}, wantErr: true},
		{name: "HS256", cfg: DPoPConfig{VerifierConfig: dpop.VerifierConfig{Algorithms: []string{"HS256"}}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := newDPoPChecker(&tt.cfg, "https://as.example.com", "https://as.example.com/token", now, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("newDPoPChecker error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if d.nonces != tt.wantNonces {
				t.Fatalf("nonces = %v, want %v", d.nonces, tt.wantNonces)
			}
			if n, err := d.verifier.Nonce(context.Background()); err != nil || (n != "") != tt.wantNonces {
				t.Fatalf("Nonce = %q, %v", n, err)
			}
		})
	}
}

// TestDPoPHeaderKey: with DPoP optional, a proof sent under the header's
// name in another case on the wire ("dpop", as HTTP/2 sends every name)
// is found, and binds the token to its key.
func TestDPoPHeaderKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", withService(&DPoPConfig{}))
	p := h.newProver()
	proof := h.proofHeader(p)
	cc := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "scope": {"mcp:read"}}
	wantBound(t, h, h.tokenHeader(cc, svcID, svcSecret, http.Header{"dpop": proof["Dpop"]}), p.JKT())
}
