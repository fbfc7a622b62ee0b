package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// dpopSetup is an authorization server, a resource server and a client
// with a known DPoP key, after one successful call.
type dpopSetup struct {
	clock  *oauthtest.Clock
	issuer string
	rs     *testRS
	c      *client.Client
	store  *tokenstore.Memory
	key    *ecdsa.PrivateKey
}

func newDPoPSetup(t *testing.T, nonces bool) *dpopSetup {
	t.Helper()
	s := &dpopSetup{clock: oauthtest.NewClock(oauthtest.Epoch()), store: tokenstore.NewMemory(), key: newECKey(t)}
	_, s.issuer = startAS(t, s.clock, func(c *authserver.Config) { c.DPoP = &authserver.DPoPConfig{RequireNonce: nonces} })
	s.rs = startRS(t, s.clock, s.issuer, nonces)
	s.c = newClient(t, s.clock, func(c *client.Config) {
		c.Store = s.store
		c.DPoP = &client.DPoPConfig{Key: s.key}
	})
	resp, err := call(t, s.c, s.rs.url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %v %v", resp, err)
	}
	return s
}

// prover signs proofs with the client's key (or another one).
func prover(t *testing.T, s *dpopSetup, key *ecdsa.PrivateKey) *dpop.Prover {
	t.Helper()
	p, err := dpop.NewProver(dpop.ProverConfig{Key: key, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRFC9449EndToEnd: the client obtains a DPoP-bound token from the
// authorization server (proof at the token endpoint, AS nonce retry when
// required) and presents it with the DPoP scheme and a fresh proof per
// request (RS nonce retry when required), through Transport.
func TestRFC9449EndToEnd(t *testing.T) {
	t.Parallel()
	for _, nonces := range []bool{false, true} {
		name := "RFC9449 §5 §7 without nonces"
		if nonces {
			name = "RFC9449 §8 §9 with AS and RS nonces"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newDPoPSetup(t, nonces)
			auth1, proof1 := s.rs.last()
			if !strings.HasPrefix(auth1, "DPoP ") || proof1 == "" {
				t.Fatalf("authorization %q, proof present %v", auth1[:min(len(auth1), 5)], proof1 != "")
			}
			resp, err := call(t, s.c, s.rs.url)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("second call: %v %v", resp, err)
			}
			if _, proof2 := s.rs.last(); proof2 == proof1 {
				t.Error("proof reused")
			}
			reg, err := s.store.Registration(context.Background(), s.issuer)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := s.store.Token(context.Background(), tokenstore.Key{Issuer: s.issuer, Resource: s.rs.url, ClientID: reg.ClientID})
			if err != nil || tok.TokenType != "DPoP" || tok.DPoPJKT != prover(t, s, s.key).JKT() {
				t.Fatalf("stored token %v %v", tok, err)
			}
		})
	}
}

// TestRFC9449ResourceNegative replays and forges proofs against the
// resource server with the token the client obtained.
func TestRFC9449ResourceNegative(t *testing.T) {
	t.Parallel()
	s := newDPoPSetup(t, false)
	auth, proof := s.rs.last()
	token := strings.TrimPrefix(auth, "DPoP ")
	mine, other := prover(t, s, s.key), prover(t, s, newECKey(t))
	mint := func(p *dpop.Prover, method, u, tok string) string {
		pr, err := p.Proof(dpop.Request{Method: method, URL: u, AccessToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	tests := []struct {
		name    string
		req     *http.Request
		wantErr error
	}{
		{"RFC9449 §11.1 replayed proof", request(http.MethodPost, s.rs.url, auth, proof), dpop.ErrReplayedProof},
		{"RFC9449 §4.3 proof for another URL", request(http.MethodPost, s.rs.url, auth, mint(mine, http.MethodPost, s.rs.url+"/other", token)), dpop.ErrHTUMismatch},
		{"RFC9449 §4.3 proof for another method", request(http.MethodPost, s.rs.url, auth, mint(mine, http.MethodGet, s.rs.url, token)), dpop.ErrHTMMismatch},
		{"RFC9449 §4.3 wrong ath", request(http.MethodPost, s.rs.url, auth, mint(mine, http.MethodPost, s.rs.url, "another-token")), dpop.ErrATHMismatch},
		{"RFC9449 §6 token bound to another key", request(http.MethodPost, s.rs.url, auth, mint(other, http.MethodPost, s.rs.url, token)), dpop.ErrKeyMismatch},
		{"RFC9449 §7.2 bound token presented as Bearer", request(http.MethodPost, s.rs.url, "Bearer "+token, ""), errRSScheme},
		{"RFC9449 §4.3 no proof", request(http.MethodPost, s.rs.url, auth, ""), dpop.ErrMissingProof},
		{"fresh proof accepted", request(http.MethodPost, s.rs.url, auth, mint(mine, http.MethodPost, s.rs.url, token)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := s.rs.check(tt.req); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestRFC9449AuthServerNegative: a public client's refresh token is bound
// to its DPoP key (RFC 9449 §5), and a token request proof cannot be
// replayed (§11.1).
func TestRFC9449AuthServerNegative(t *testing.T) {
	t.Parallel()
	s := newDPoPSetup(t, false)
	ctx := context.Background()
	reg, err := s.store.Registration(ctx, s.issuer)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.store.Token(ctx, tokenstore.Key{Issuer: s.issuer, Resource: s.rs.url, ClientID: reg.ClientID})
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("no refresh token: %v", err)
	}
	tokenURL := s.issuer + "/token"
	refresh := func(proof string) (int, *oauthmeta.Error, *oauthmeta.TokenResponse) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {reg.ClientID}}
		var hdr http.Header
		if proof != "" {
			hdr = http.Header{dpop.HeaderName: {proof}}
		}
		return tokenRequest(t, tokenURL, form, hdr, "", "")
	}
	mint := func(key *ecdsa.PrivateKey) string {
		p, err := prover(t, s, key).Proof(dpop.Request{Method: http.MethodPost, URL: tokenURL})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if status, oe, _ := refresh(""); status != 400 || oe == nil || oe.Code != oauthmeta.CodeInvalidGrant {
		t.Errorf("refresh without proof: %d %v, want invalid_grant", status, oe)
	}
	if status, oe, _ := refresh(mint(newECKey(t))); status != 400 || oe == nil || oe.Code != oauthmeta.CodeInvalidGrant {
		t.Errorf("refresh with another key: %d %v, want invalid_grant", status, oe)
	}
	good := mint(s.key)
	status, _, tr := refresh(good)
	if status != 200 || tr == nil || tr.TokenType != "DPoP" {
		t.Fatalf("refresh with the bound key: %d %v", status, tr)
	}
	tok.RefreshToken = tr.RefreshToken
	if status, oe, _ := refresh(good); status != 400 || oe == nil || oe.Code != oauthmeta.CodeInvalidDPoPProof {
		t.Errorf("replayed token request proof: %d %v, want invalid_dpop_proof", status, oe)
	}
}

// TestRFC9449SDKAdapterNeedsTransport: a DPoP-bound token is never handed
// to the SDK unless the handler's HTTP client presents it.
func TestRFC9449SDKAdapterNeedsTransport(t *testing.T) {
	t.Parallel()
	s := newDPoPSetup(t, false)
	h, err := s.c.OAuthHandler(s.rs.url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.TokenSource(context.Background()); !errors.Is(err, errDPoPTransport) {
		t.Fatalf("TokenSource without HTTPClient: %v", err)
	}
	if _, err := s.c.TokenSource(context.Background(), s.rs.url).Token(); !errors.Is(err, errDPoPTransport) {
		t.Fatalf("Client.TokenSource handed out a DPoP-bound token: %v", err)
	}
	hc := h.HTTPClient(nil)
	ts, err := h.TokenSource(context.Background())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource: %v", err)
	}
	tk, _ := ts.Token()
	req, _ := http.NewRequest(http.MethodPost, s.rs.url, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tk.AccessToken) // what the SDK writes
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("through HTTPClient: %v %v", resp, err)
	}
	resp.Body.Close()
	if auth, proof := s.rs.last(); !strings.HasPrefix(auth, "DPoP ") || proof == "" {
		t.Error("not presented as DPoP")
	}
}

// TestRFC9449RedirectFreshProof: a request redirected (308) to the
// resource from another path of its origin reaches it with the DPoP token
// and a fresh proof for the resource's URL (RFC 9449 §4.2 htu), not
// without one and not with a proof made for the previous URL.
func TestRFC9449RedirectFreshProof(t *testing.T) {
	t.Parallel()
	s := newDPoPSetup(t, false)
	_, before := s.rs.last()
	tr, err := s.c.Transport(s.rs.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(s.rs.url, "/mcp")+"/mcp-moved", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	resp, err := tr.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("redirected call: status %d", resp.StatusCode)
	}
	auth, proof := s.rs.last()
	if !strings.HasPrefix(auth, "DPoP ") || proof == "" || proof == before {
		t.Fatalf("the resource got scheme %q and a fresh proof: %v", auth[:min(len(auth), 5)], proof != "" && proof != before)
	}
	parts := strings.Split(proof, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		HTU string `json:"htu"`
		HTM string `json:"htm"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.HTU != s.rs.url || claims.HTM != http.MethodPost {
		t.Errorf("proof htu %q htm %q, want %q POST (%v)", claims.HTU, claims.HTM, s.rs.url, err)
	}
}
