package client_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func jwksOf(t *testing.T, kid string, pub crypto.PublicKey) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: kid, Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClientCredentialsEndToEnd: the client_credentials grant with
// client_secret_basic and with private_key_jwt (RFC 7523 §2.2), tokens used
// at the resource; misconfigurations fail closed (CL-18).
func TestClientCredentialsEndToEnd(t *testing.T) {
	t.Parallel()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	key := oauthtest.NewKey(t, "ES256", "svc-key")
	_, issuer := startAS(t, clock, func(c *authserver.Config) {
		c.Clients = []authserver.Client{
			{ID: "svc-basic", Secret: "s3cret", GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}},
			{ID: "svc-jwt", JWKS: jwksOf(t, key.ID, key.Public()), GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}},
		}
	})
	rs := startRS(t, clock, issuer, false)
	tests := []struct {
		name    string
		grant   *client.ClientCredentials
		wantErr error
	}{
		{"client_secret_basic", &client.ClientCredentials{Issuer: issuer, Credentials: client.Credentials{ClientID: "svc-basic", ClientSecret: "s3cret"}}, nil},
		{"RFC7523 private_key_jwt", &client.ClientCredentials{Credentials: client.Credentials{ClientID: "svc-jwt", PrivateKey: key.Signer, KeyID: key.ID}}, nil},
		{"private_key_jwt from PEM", &client.ClientCredentials{Credentials: client.Credentials{ClientID: "svc-jwt", PrivateKeyPEM: privatePEM(t, key), KeyID: key.ID}}, nil},
		{"wrong secret", &client.ClientCredentials{Issuer: issuer, Credentials: client.Credentials{ClientID: "svc-basic", ClientSecret: "nope"}}, errTokenResponse},
		{"CL-18 credentials bound to another issuer", &client.ClientCredentials{Issuer: "http://127.0.0.1:1", Credentials: client.Credentials{ClientID: "svc-basic", ClientSecret: "s3cret"}}, errIssuerChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, clock, func(c *client.Config) { c.Authorizer, c.Grant = nil, tt.grant })
			resp, err := call(t, c, rs.url)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
	t.Run("CL-18 a secret without Issuer is refused", func(t *testing.T) {
		t.Parallel()
		_, err := client.New(client.Config{Grant: &client.ClientCredentials{Credentials: client.Credentials{ClientID: "a", ClientSecret: "b"}}})
		if !errors.Is(err, client.ErrConfig) {
			t.Fatalf("err = %v", err)
		}
	})
}

func privatePEM(t *testing.T, k *oauthtest.Key) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TestRFC7523ClientAssertionNegative: assertions that are replayed,
// expired, for another audience or signed by another key are refused with
// invalid_client (RFC 7523 §3, §3.2).
func TestRFC7523ClientAssertionNegative(t *testing.T) {
	t.Parallel()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	key := oauthtest.NewKey(t, "ES256", "svc-key")
	_, issuer := startAS(t, clock, func(c *authserver.Config) {
		c.Clients = []authserver.Client{{ID: "svc-jwt", JWKS: jwksOf(t, key.ID, key.Public()), GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}}}
	})
	sign := func(k *oauthtest.Key, now func() time.Time, aud string) string {
		s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "svc-jwt", Key: k.Signer, KeyID: key.ID, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Sign(aud)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	form := func(assertion string) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc-jwt"},
			"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {assertion}}
	}
	good := sign(key, clock.Now, issuer)
	if status, oe := postToken(t, issuer+"/token", form(good), "", ""); status != http.StatusOK {
		t.Fatalf("valid assertion: %d %v", status, oe)
	}
	past := func() time.Time { return clock.Now().Add(-10 * time.Minute) }
	tests := []struct {
		name      string
		assertion string
	}{
		{"RFC7523 §3 item 7 replayed assertion", good},
		{"RFC7523 §3 item 4 expired assertion", sign(key, past, issuer)},
		{"RFC7523 §3 item 3 assertion for another audience", sign(key, clock.Now, "https://other-as.example.com")},
		{"RFC7523 §3 item 9 signed by another key", sign(oauthtest.NewKey(t, "ES256", "svc-key"), clock.Now, issuer)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, oe := postToken(t, issuer+"/token", form(tt.assertion), "", "")
			if status != http.StatusUnauthorized {
				t.Errorf("status %d", status)
			}
			wantOAuthError(t, tt.name, status, oe, oauthmeta.CodeInvalidClient)
		})
	}
}

// idjagSetup is an enterprise IdP (an authserver playing the IdP role,
// trusting an SSO provider's ID tokens) and the MCP server's authorization
// server trusting the IdP's ID-JAGs.
type idjagSetup struct {
	clock          *oauthtest.Clock
	sso            *oauthtest.Key
	idp, resAS     string
	rs             *testRS
	idTokenExpires time.Duration
	idpRequests    atomic.Int64 // requests the IdP received
}

const ssoIssuer = "https://sso.example.com"

func newIDJAGSetup(t *testing.T) *idjagSetup { return newIDJAGSetupWith(t, nil) }

// newIDJAGSetupWith is newIDJAGSetup with the resource authorization
// server's metadata document passed through edit first (nil: as is).
func newIDJAGSetupWith(t *testing.T, edit func(doc map[string]any)) *idjagSetup {
	t.Helper()
	s := &idjagSetup{clock: oauthtest.NewClock(oauthtest.Epoch()), sso: oauthtest.NewKey(t, "ES256", "sso")}
	idpLn, asLn := listen(t), listen(t)
	s.idp, s.resAS = issuerOf(idpLn), issuerOf(asLn)
	idp := newAS(t, s.idp, s.clock, func(c *authserver.Config) {
		c.Clients = []authserver.Client{{ID: "idp-app", Secret: "idp-secret", GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}}}
		c.IdentityProvider = &authserver.IdentityProviderConfig{
			IDTokenIssuers: []authserver.TrustedIssuer{{Issuer: ssoIssuer, PublicKeys: []crypto.PublicKey{s.sso.Public()}}},
			Audiences:      []authserver.IDJAGAudience{{Issuer: s.resAS, ClientIDs: map[string]string{"idp-app": "mcp-app"}}},
		}
	})
	serveOn(t, idpLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.idpRequests.Add(1)
		idp.ServeHTTP(w, r)
	}))
	resAS := newAS(t, s.resAS, s.clock, func(c *authserver.Config) {
		c.Clients = []authserver.Client{
			{ID: "mcp-app", Secret: "mcp-secret", GrantTypes: []string{oauthmeta.GrantTypeJWTBearer}},
			{ID: "other-app", Secret: "other-secret", GrantTypes: []string{oauthmeta.GrantTypeJWTBearer}},
		}
		c.TrustedIssuers = []authserver.TrustedIssuer{{Issuer: s.idp, Kind: authserver.GrantIDJAG, JWKSURI: s.idp + "/jwks.json"}}
		c.KeyFetch.InsecureAllowHTTPLoopback = true
	})
	if edit == nil {
		serveOn(t, asLn, resAS)
	} else {
		serveOn(t, asLn, editedMetadata(t, resAS, edit))
	}
	s.rs = startRS(t, s.clock, s.resAS, false)
	return s
}

// editedMetadata serves h, with its RFC 8414 metadata passed through edit.
func editedMetadata(t *testing.T, h http.Handler, edit func(doc map[string]any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/.well-known/") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			w.WriteHeader(rec.Code)
			return
		}
		edit(doc)
		body, err := json.Marshal(doc)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

func (s *idjagSetup) idToken(t *testing.T, exp time.Duration) string {
	now := s.clock.Now()
	return signJWT(t, s.sso, "JWT", map[string]any{
		"iss": ssoIssuer, "sub": "alice", "aud": "idp-app", "iat": now.Unix(), "exp": now.Add(exp).Unix(),
	})
}

func (s *idjagSetup) grant(t *testing.T, idt string) *client.EnterpriseAuthorization {
	return &client.EnterpriseAuthorization{
		IdPTokenEndpoint: s.idp + "/token",
		IdPCredentials:   client.Credentials{ClientID: "idp-app", ClientSecret: "idp-secret"},
		IDToken:          func(context.Context) (string, error) { return idt, nil },
		Issuer:           s.resAS,
		Credentials:      client.Credentials{ClientID: "mcp-app", ClientSecret: "mcp-secret"},
	}
}

// exchange asks the IdP directly for an ID-JAG for audience.
func (s *idjagSetup) exchange(t *testing.T, idt, audience string) (string, int, *oauthmeta.Error) {
	t.Helper()
	form := url.Values{
		"grant_type": {oauthmeta.GrantTypeTokenExchange}, "requested_token_type": {oauthmeta.TokenTypeIDJAG},
		"subject_token": {idt}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
		"audience": {audience}, "resource": {s.rs.url},
	}
	status, oe, tr := tokenRequest(t, s.idp+"/token", form, nil, "idp-app", "idp-secret")
	if oe != nil || status != http.StatusOK {
		return "", status, oe
	}
	if tr == nil || tr.IssuedTokenType != oauthmeta.TokenTypeIDJAG {
		t.Fatalf("exchange response: %+v", tr)
	}
	return tr.AccessToken, status, nil
}

// TestEnterpriseManagedAuthorizationEndToEnd: ID token → ID-JAG at the IdP
// (RFC 8693) → access token at the MCP authorization server (RFC 7523
// JWT-bearer) → MCP request.
func TestEnterpriseManagedAuthorizationEndToEnd(t *testing.T) {
	t.Parallel()
	s := newIDJAGSetup(t)
	c := newClient(t, s.clock, func(c *client.Config) { c.Authorizer, c.Grant = nil, s.grant(t, s.idToken(t, time.Hour)) })
	resp, err := call(t, c, s.rs.url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	t.Run("expired ID token", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, s.clock, func(c *client.Config) { c.Authorizer, c.Grant = nil, s.grant(t, s.idToken(t, -time.Hour)) })
		_, err := call(t, c, s.rs.url)
		if !errors.Is(err, errTokenExchange) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestEnterpriseAuthorizationGrantProfile: the client reads the
// authorization server's authorization_grant_profiles_supported
// (Enterprise-Managed Authorization §6) and grant_types_supported before
// it asks the IdP: a server that lists other profiles only, or lacks the
// JWT-bearer grant, is refused with errGrantUnsupported and the IdP never
// sees the ID token; a server that omits the optional member is tried,
// and its refusal says that the profile was not advertised.
func TestEnterpriseAuthorizationGrantProfile(t *testing.T) {
	t.Parallel()
	set := func(k string, v any) func(map[string]any) { return func(doc map[string]any) { doc[k] = v } }
	omit := func(doc map[string]any) { delete(doc, "authorization_grant_profiles_supported") }
	for _, tc := range []struct {
		name        string
		edit        func(map[string]any)
		mcpClient   string // the client at the MCP authorization server; "" = mcp-app
		wantErr     error
		wantIdP     bool   // the IdP was asked
		wantMessage string // in the error
	}{
		{"advertised by the authorization server", func(doc map[string]any) {
			if p, _ := doc["authorization_grant_profiles_supported"].([]any); len(p) != 1 || p[0] != oauthmeta.GrantProfileIDJAG {
				t.Errorf("authorization_grant_profiles_supported = %v", doc["authorization_grant_profiles_supported"])
			}
		}, "", nil, true, ""},
		{"another profile only", set("authorization_grant_profiles_supported", []string{"urn:example:grant-profile:other"}), "",
			errGrantUnsupported, false, "authorization_grant_profiles_supported does not list " + oauthmeta.GrantProfileIDJAG},
		{"no JWT-bearer grant", set("grant_types_supported", []string{"authorization_code", "refresh_token"}), "",
			errGrantUnsupported, false, oauthmeta.GrantTypeJWTBearer},
		{"member omitted", omit, "", nil, true, ""},
		{"member omitted, ID-JAG refused", omit, "other-app", errTokenResponse, true,
			"does not advertise " + oauthmeta.GrantProfileIDJAG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newIDJAGSetupWith(t, tc.edit)
			g := s.grant(t, s.idToken(t, time.Hour))
			if tc.mcpClient != "" {
				g.Credentials = client.Credentials{ClientID: tc.mcpClient, ClientSecret: "other-secret"}
			}
			c := newClient(t, s.clock, func(c *client.Config) { c.Authorizer, c.Grant = nil, g })
			resp, err := call(t, c, s.rs.url)
			switch {
			case tc.wantErr == nil && (err != nil || resp.StatusCode != http.StatusOK):
				t.Fatalf("call: %v %v", resp, err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			case err != nil && !strings.Contains(err.Error(), tc.wantMessage):
				t.Fatalf("err = %v, want it to say %q", err, tc.wantMessage)
			}
			// The IdP is asked for an ID-JAG, or not at all.
			if asked := s.idpRequests.Load() > 0; asked != tc.wantIdP {
				t.Fatalf("IdP asked: %v, want %v", asked, tc.wantIdP)
			}
		})
	}
}

// TestIDJAGNegative: the IdP issues ID-JAGs only for configured audiences;
// the MCP authorization server refuses a replayed ID-JAG and one presented
// by another client.
func TestIDJAGNegative(t *testing.T) {
	t.Parallel()
	s := newIDJAGSetup(t)
	idt := s.idToken(t, time.Hour)
	if _, status, oe := s.exchange(t, idt, "https://other-as.example.com"); status != http.StatusBadRequest {
		t.Errorf("ID-JAG for another audience: %d %v", status, oe)
	} else {
		wantOAuthError(t, "ID-JAG for another audience", status, oe, oauthmeta.CodeInvalidTarget)
	}
	jag, status, oe := s.exchange(t, idt, s.resAS)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, oe)
	}
	form := url.Values{"grant_type": {oauthmeta.GrantTypeJWTBearer}, "assertion": {jag}, "resource": {s.rs.url}}
	if status, oe := postToken(t, s.resAS+"/token", form, "other-app", "other-secret"); status != http.StatusBadRequest {
		t.Errorf("ID-JAG presented by another client: %d %v", status, oe)
	} else {
		wantOAuthError(t, "ID-JAG presented by another client", status, oe, oauthmeta.CodeInvalidGrant)
	}
	if status, oe := postToken(t, s.resAS+"/token", form, "mcp-app", "mcp-secret"); status != http.StatusOK {
		t.Fatalf("ID-JAG: %d %v", status, oe)
	}
	status, oe = postToken(t, s.resAS+"/token", form, "mcp-app", "mcp-secret")
	wantOAuthError(t, "replayed ID-JAG", status, oe, oauthmeta.CodeInvalidGrant)
}

// wifSetup is an authorization server trusting a workload platform.
type wifSetup struct {
	clock    *oauthtest.Clock
	platform *oauthtest.Key
	issuer   string
	rs       *testRS
}

const platformIssuer = "https://k8s.example.com"

func newWIFSetup(t *testing.T) *wifSetup {
	t.Helper()
	s := &wifSetup{clock: oauthtest.NewClock(oauthtest.Epoch()), platform: oauthtest.NewKey(t, "ES256", "k8s")}
	_, s.issuer = startAS(t, s.clock, func(c *authserver.Config) {
		c.TrustedIssuers = []authserver.TrustedIssuer{{Issuer: platformIssuer, PublicKeys: []crypto.PublicKey{s.platform.Public()}, Scopes: []string{"mcp"},
			Rules: []authserver.WorkloadRule{{Subject: "system:serviceaccount:ns:*", Resources: []string{"http://127.0.0.1:*/mcp"}, Scopes: []string{"mcp"}}}}}
	})
	s.rs = startRS(t, s.clock, s.issuer, false)
	return s
}

func (s *wifSetup) workloadJWT(t *testing.T, aud string, exp time.Duration, jti string) string {
	now := s.clock.Now()
	return signJWT(t, s.platform, "", map[string]any{
		"iss": platformIssuer, "sub": "system:serviceaccount:ns:agent", "aud": aud,
		"iat": now.Unix(), "exp": now.Add(exp).Unix(), "jti": jti,
	})
}

// TestWorkloadIdentityEndToEnd: a platform JWT for the authorization
// server's issuer becomes an access token; JWTs for another audience or
// expired are never sent; a refused grant is reported once, without retry
// or fallback.
func TestWorkloadIdentityEndToEnd(t *testing.T) {
	t.Parallel()
	s := newWIFSetup(t)
	var n atomic.Int64
	tests := []struct {
		name    string
		mint    func(aud string) string
		scopes  []string
		wantErr error
	}{
		{"valid assertion", func(aud string) string { return s.workloadJWT(t, aud, time.Hour, randomJTI(&n)) }, nil, nil},
		{"RFC7523 §3 item 3 assertion for another audience", func(string) string {
			return s.workloadJWT(t, "https://other-as.example.com", time.Hour, randomJTI(&n))
		}, nil, errAssertion},
		{"RFC7523 §3 item 4 expired assertion", func(aud string) string { return s.workloadJWT(t, aud, -time.Minute, randomJTI(&n)) }, nil, errAssertion},
		{"refused scope, no retry", func(aud string) string { return s.workloadJWT(t, aud, time.Hour, randomJTI(&n)) }, []string{"admin"}, errTokenResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			c := newClient(t, s.clock, func(c *client.Config) {
				c.Authorizer = nil
				c.Grant = &client.WorkloadIdentity{Scopes: tt.scopes, Assertion: func(_ context.Context, aud string) (string, error) {
					calls.Add(1)
					return tt.mint(aud), nil
				}}
			})
			resp, err := call(t, c, s.rs.url)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if calls.Load() != 1 {
				t.Errorf("assertion requested %d times, want 1 (no retry)", calls.Load())
			}
		})
	}
}

// TestWorkloadAssertionServerNegative: the authorization server itself
// refuses replayed, expired and wrong-audience workload assertions
// (invalid_grant), whatever a client does.
func TestWorkloadAssertionServerNegative(t *testing.T) {
	t.Parallel()
	s := newWIFSetup(t)
	var n atomic.Int64
	valid := s.workloadJWT(t, s.issuer, time.Hour, randomJTI(&n))
	form := func(a string) url.Values {
		return url.Values{"grant_type": {oauthmeta.GrantTypeJWTBearer}, "assertion": {a}, "resource": {s.rs.url}}
	}
	if status, oe := postToken(t, s.issuer+"/token", form(valid), "", ""); status != http.StatusOK {
		t.Fatalf("valid: %d %v", status, oe)
	}
	tests := []struct{ name, assertion string }{
		{"RFC7523 §3 item 7 replayed assertion", valid},
		{"RFC7523 §3 item 4 expired assertion", s.workloadJWT(t, s.issuer, -time.Minute, randomJTI(&n))},
		{"RFC7523 §3 item 3 assertion for another audience", s.workloadJWT(t, "https://other-as.example.com", time.Hour, randomJTI(&n))},
		{"RFC7523 §3 item 1 untrusted issuer", signJWT(t, oauthtest.NewKey(t, "ES256", "k8s"), "", map[string]any{
			"iss": "https://evil.example.com", "sub": "x", "aud": s.issuer, "exp": s.clock.Now().Add(time.Hour).Unix(), "jti": "j"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, oe := postToken(t, s.issuer+"/token", form(tt.assertion), "", "")
			wantOAuthError(t, tt.name, status, oe, oauthmeta.CodeInvalidGrant)
		})
	}
}

func randomJTI(n *atomic.Int64) string { return "jti-" + time.Duration(n.Add(1)).String() }

// TestWorkloadIdentityFile: the platform token is read from a file (a
// projected service account token) on every grant.
func TestWorkloadIdentityFile(t *testing.T) {
	t.Parallel()
	s := newWIFSetup(t)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(s.workloadJWT(t, s.issuer, time.Hour, "file-1")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s.clock, func(c *client.Config) {
		c.Authorizer, c.Grant = nil, &client.WorkloadIdentity{AssertionFile: path, Credentials: client.Credentials{ClientID: "agent"}}
	})
	resp, err := call(t, c, s.rs.url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	if err := os.WriteFile(path, []byte("not a jwt"), 0o600); err != nil {
		t.Fatal(err)
	}
	c2 := newClient(t, s.clock, func(c *client.Config) {
		c.Authorizer, c.Grant = nil, &client.WorkloadIdentity{AssertionFile: path}
	})
	if _, err := call(t, c2, s.rs.url); !errors.Is(err, errAssertion) {
		t.Fatalf("unreadable token: %v", err)
	}
}
