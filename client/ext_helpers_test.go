package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// The end-to-end tests of this file family run the client against a real
// authorization server (package authserver) and a small resource server
// built here from package dpop and go-jose, all on 127.0.0.1 with one
// fixed clock.

// startAS starts an authorization server at a fresh 127.0.0.1 address.
func startAS(t *testing.T, clock *oauthtest.Clock, mutate func(*authserver.Config)) (*authserver.Server, string) {
	t.Helper()
	return startASOn(t, listen(t), clock, mutate)
}

// listen reserves a 127.0.0.1 address, so that servers can name each other
// before they start.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func issuerOf(ln net.Listener) string { return "http://" + ln.Addr().String() }

// startASOn starts an authorization server on ln.
func startASOn(t *testing.T, ln net.Listener, clock *oauthtest.Clock, mutate func(*authserver.Config)) (*authserver.Server, string) {
	t.Helper()
	srv := newAS(t, issuerOf(ln), clock, mutate)
	serveOn(t, ln, srv)
	return srv, issuerOf(ln)
}

// newAS returns an authorization server for issuer, not yet served.
func newAS(t *testing.T, issuer string, clock *oauthtest.Clock, mutate func(*authserver.Config)) *authserver.Server {
	t.Helper()
	cfg := authserver.Config{
		Issuer: issuer, InsecureAllowHTTPLoopback: true, Scopes: []string{"mcp"}, DefaultScopes: []string{"mcp"},
		Consent: authserver.ConsentAuto, DisableClientIDMetadataDocuments: true, Now: clock.Now,
		RateLimit: authserver.RateLimit{PerIP: 1e6, PerClient: 1e6, Burst: 1000, PerIPBrowser: 1e6, BrowserBurst: 1000},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := authserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// serveOn serves h on ln until the test ends.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) {
	t.Helper()
	hs := httptest.NewUnstartedServer(h)
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
}

// testRS is a protected MCP endpoint: it verifies the authorization
// server's JWT access tokens (signature, issuer, audience, expiry) and, for
// tokens with cnf.jkt, the DPoP proof and its binding (RFC 9449 §7). It
// records what the last authorized request carried.
type testRS struct {
	t        *testing.T
	url      string
	issuer   string
	clock    *oauthtest.Clock
	verifier *dpop.Verifier

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	lastAuth  string
	lastProof string
	schemes   []string
}

func startRS(t *testing.T, clock *oauthtest.Clock, issuer string, nonces bool) *testRS {
	t.Helper()
	rs := &testRS{t: t, issuer: issuer, clock: clock}
	vc := dpop.VerifierConfig{Now: clock.Now}
	if nonces {
		n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: make([]byte, 32), Label: "test-rs", Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		vc.Nonces = n
	}
	v, err := dpop.NewVerifier(vc)
	if err != nil {
		t.Fatal(err)
	}
	rs.verifier = v
	hs := httptest.NewServer(rs)
	t.Cleanup(hs.Close)
	rs.url = hs.URL + "/mcp"
	return rs
}

func (rs *testRS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(oauthmeta.ProtectedResourceMetadata{
			Resource: rs.url, AuthorizationServers: []string{rs.issuer}, ScopesSupported: []string{"mcp"},
			DPoPSigningAlgValuesSupported: []string{"ES256"},
		})
		return
	}
	if r.URL.Path == "/mcp-moved" { // the resource's old address
		http.Redirect(w, r, rs.url, http.StatusPermanentRedirect)
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+strings.TrimSuffix(rs.url, "/mcp")+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if err := rs.check(r); err != nil {
		if dpop.IsNonceError(err) {
			n, _ := rs.verifier.Nonce(r.Context())
			w.Header().Set(dpop.NonceHeader, n)
		}
		w.Header().Set("WWW-Authenticate", dpop.Challenge(rs.verifier.Algorithms(), err).String())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	rs.mu.Lock()
	rs.lastAuth, rs.lastProof = r.Header.Get("Authorization"), r.Header.Get(dpop.HeaderName)
	rs.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"ok":true}`)
}

var (
	errRSToken  = errors.New("testRS: invalid access token")
	errRSScheme = errors.New("testRS: wrong authorization scheme")
)

// check authorizes a request (RFC 6750 §2.1, RFC 9449 §7).
func (rs *testRS) check(r *http.Request) error {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	rs.mu.Lock()
	rs.schemes = append(rs.schemes, scheme)
	rs.mu.Unlock()
	jkt, err := rs.verifyToken(tok)
	if err != nil {
		return err
	}
	if jkt == "" {
		if !strings.EqualFold(scheme, "Bearer") {
			return errRSScheme
		}
		return nil
	}
	if !strings.EqualFold(scheme, dpop.Scheme) {
		return errRSScheme // a DPoP-bound token presented as Bearer
	}
	proof, err := dpop.ProofFromHeader(r.Header)
	if err != nil {
		return err
	}
	p, err := rs.verifier.Verify(r.Context(), proof, dpop.Request{Method: r.Method, URL: rs.url, AccessToken: tok})
	if err != nil {
		return err
	}
	return p.CheckBinding(jkt)
}

// verifyToken verifies an access token of the authorization server and
// returns its cnf.jkt ("" for a Bearer token).
func (rs *testRS) verifyToken(raw string) (string, error) {
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 {
		return "", errRSToken
	}
	key := rs.key(jws.Signatures[0].Header.KeyID)
	if key == nil {
		return "", errRSToken
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return "", errRSToken
	}
	var c struct {
		Iss string                  `json:"iss"`
		Aud oauthmeta.Audience      `json:"aud"`
		Exp int64                   `json:"exp"`
		Cnf *oauthmeta.Confirmation `json:"cnf"`
	}
	if json.Unmarshal(payload, &c) != nil || c.Iss != rs.issuer || !c.Aud.Contains(rs.url) || c.Exp <= rs.clock.Now().Unix() {
		return "", errRSToken
	}
	if c.Cnf == nil {
		return "", nil
	}
	if c.Cnf.JKT == "" {
		return "", errRSToken
	}
	return c.Cnf.JKT, nil
}

func (rs *testRS) key(kid string) *jose.JSONWebKey {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.keys == nil {
		resp, err := http.Get(rs.issuer + "/jwks.json")
		if err != nil {
			rs.t.Error(err)
			return nil
		}
		defer resp.Body.Close()
		var set jose.JSONWebKeySet
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			rs.t.Error(err)
			return nil
		}
		rs.keys = &set
	}
	if ks := rs.keys.Key(kid); len(ks) > 0 {
		return &ks[0]
	}
	return nil
}

// last returns the Authorization and DPoP headers of the last request the
// resource server accepted.
func (rs *testRS) last() (auth, proof string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lastAuth, rs.lastProof
}

// call POSTs to the resource through the client's Transport.
func call(t *testing.T, c *client.Client, url string) (*http.Response, error) {
	t.Helper()
	tr, err := c.Transport(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.HTTPClient().Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// request is a resource request carrying the given headers, for replaying
// captured credentials at testRS.check.
func request(method, url, auth, proof string) *http.Request {
	r := httptest.NewRequest(method, url, nil)
	r.Header.Set("Authorization", auth)
	if proof != "" {
		r.Header.Set(dpop.HeaderName, proof)
	}
	return r
}

// newClient returns a client for loopback servers with the given clock.
func newClient(t *testing.T, clock *oauthtest.Clock, mutate func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{Authorizer: &client.FollowRedirects{}, InsecureAllowHTTPLoopback: true, Now: clock.Now}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// signJWT signs claims with key under a header with typ (empty omits it).
func signJWT(t *testing.T, key *oauthtest.Key, typ string, claims map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	opts = opts.WithHeader(jose.HeaderKey("kid"), key.ID)
	sg, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key.Signer}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	obj, err := sg.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// postToken POSTs form to a token endpoint, with Basic credentials when id
// is set, and returns the status and the error body, if any.
func postToken(t *testing.T, endpoint string, form url.Values, id, secret string) (int, *oauthmeta.Error) {
	t.Helper()
	status, oe, _ := tokenRequest(t, endpoint, form, nil, id, secret)
	return status, oe
}

// tokenRequest POSTs form to a token endpoint with the header fields of
// extra, and Basic credentials when id is set. It returns the status and,
// by that, either the error body or the token response.
func tokenRequest(t *testing.T, endpoint string, form url.Values, extra http.Header, id, secret string) (int, *oauthmeta.Error, *oauthmeta.TokenResponse) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		oe, _ := oauthmeta.ParseError(body)
		return resp.StatusCode, oe, nil
	}
	tr, _ := oauthmeta.ParseTokenResponse(body)
	return resp.StatusCode, nil, tr
}

// wantOAuthError fails unless oe has code.
func wantOAuthError(t *testing.T, what string, status int, oe *oauthmeta.Error, code oauthmeta.ErrorCode) {
	t.Helper()
	if oe == nil || oe.Code != code {
		t.Errorf("%s: status %d, error %v, want %s", what, status, oe, code)
	}
}

// Reasons the external tests expect, matched with errors.Is by reason
// (see client.Error.Is).
var (
	errAssertion        = &client.Error{Reason: "unusable authorization grant assertion"}
	errDPoPTransport    = &client.Error{Reason: "a DPoP-bound token needs a proof: send it through Client.Transport or OAuthHandler.HTTPClient"}
	errDPoPUnsupported  = &client.Error{Reason: "the resource requires DPoP-bound tokens and none can be obtained"}
	errGrantUnsupported = &client.Error{Reason: "authorization server does not support the grant type"}
	errIssuerChanged    = &client.Error{Reason: "the authorization server changed and pre-registered credentials are bound to another issuer"}
	errTokenExchange    = &client.Error{Reason: "ID-JAG token exchange failed"}
	errTokenResponse    = &client.Error{Reason: "token request failed"}
)
