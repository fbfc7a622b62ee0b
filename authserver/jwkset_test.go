package authserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const jwksClientID = "svc-jwks"

// caseAssertion signs a client assertion with the row's signer, by hand so
// that keys the signer of package jwtassert refuses (RSA under 2048 bits)
// can be offered too.
func caseAssertion(t *testing.T, h *harness, tt oauthtest.JWKSCase, clientID string) string {
	t.Helper()
	now := h.clock.Now().Unix()
	return oauthtest.SignRaw(t, tt.Signer.Signer,
		map[string]any{"alg": tt.Signer.Algorithm, "kid": tt.Signer.ID, "typ": "client-authentication+jwt"},
		map[string]any{"iss": clientID, "sub": clientID, "aud": h.issuer, "jti": rand.Text(), "iat": now, "exp": now + 60})
}

// wantCaseResult checks that the token endpoint authenticated the client
// exactly when the row's key is usable.
func wantCaseResult(t *testing.T, tt oauthtest.JWKSCase, res tokenResult) {
	t.Helper()
	if tt.Verifies() {
		if res.status != http.StatusOK {
			t.Fatalf("token: %d %s; want 200", res.status, res.body)
		}
		return
	}
	wantError(t, res, http.StatusUnauthorized, oauthmeta.CodeInvalidClient)
}

// clientCredentials runs a client_credentials request authenticated with
// the row's signer.
func clientCredentials(t *testing.T, h *harness, tt oauthtest.JWKSCase) tokenResult {
	t.Helper()
	return h.token(url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "scope": {"mcp:read"}, "client_id": {jwksClientID},
		"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {caseAssertion(t, h, tt, jwksClientID)}}, "", "")
}

func jwksClient(jwks []byte, jwksURI string) Client {
	return Client{ID: jwksClientID, Name: "Service", AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT, JWKS: jwks, JWKSURI: jwksURI,
		GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}}
}

// TestJWKSCasesClientJWKS runs the shared JWK Set table
// (oauthtest.JWKSCases) through a pre-registered client's inline "jwks": a
// refused set fails configuration, an accepted one authenticates
// private_key_jwt exactly when the signer's key is usable.
func TestJWKSCasesClientJWKS(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Issuer: "http://127.0.0.1:1", InsecureAllowHTTPLoopback: true, Consent: ConsentAuto,
				Scopes: []string{"mcp:read"}, Clients: []Client{jwksClient(tt.JWKS, "")}})
			if tt.Refused {
				if err == nil || !strings.Contains(err.Error(), "JWKS") {
					t.Fatalf("New = %v; want the JWKS refused", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			h := newHarness(t, "", func(c *Config) { c.Clients = append(c.Clients, jwksClient(tt.JWKS, "")) })
			wantCaseResult(t, tt, clientCredentials(t, h, tt))
		})
	}
}

// TestJWKSCasesClientJWKSURI runs the shared JWK Set table through a
// client's "jwks_uri", fetched at authentication time: judged exactly as
// the inline set.
func TestJWKSCasesClientJWKSURI(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			srv := oauthtest.NewJWKSServer(t)
			srv.SetRawJWKS(tt.JWKS)
			h := newHarness(t, "", func(c *Config) {
				c.Clients = append(c.Clients, jwksClient(nil, srv.JWKSURI))
				c.KeyFetch = KeyFetchConfig{TLSConfig: srv.TLSConfig(), InsecureAllowHTTPLoopback: true}
			})
			wantCaseResult(t, tt, clientCredentials(t, h, tt))
			if n := srv.JWKSFetches(); n != 1 {
				t.Errorf("JWK Set fetches = %d, want 1", n)
			}
		})
	}
}

// TestJWKSCasesCIMDJWKS runs the shared JWK Set table through the "jwks" of
// a Client ID Metadata Document, parsed when the client is resolved (a
// refused set gets no code) and when it authenticates.
// Rows that are not a JSON value cannot be embedded in a document and are
// covered by the tests above.
func TestJWKSCasesCIMDJWKS(t *testing.T) {
	t.Parallel()
	const clientID = "https://client.example.com/pk.json"
	for _, tt := range oauthtest.JWKSCases(t) {
		if !json.Valid(tt.JWKS) {
			continue
		}
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			doc := strings.Replace(cimdDoc(clientID, `,"jwks":`+string(tt.JWKS)), `"none"`, `"private_key_jwt"`, 1)
			host := newCIMDHostWith(t, map[string]string{"/pk.json": doc})
			r, err := clientmeta.NewResolver(*nethook.Set(&clientmeta.ResolverConfig{
				MaxBytes:  1 << 20,
				TLSConfig: host.srv.Client().Transport.(*http.Transport).TLSClientConfig,
			}, nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr), Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, host.srv.Listener.Addr().String())
			}}))
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, "", func(c *Config) { c.ClientMetadata = r })
			q, v := authParams(clientID, cimdCB)
			resp := h.authorize(q)
			loc := resp.Header.Get("Location")
			u, _ := url.Parse(loc)
			if resp.StatusCode != http.StatusFound || u == nil || u.Query().Get("code") == "" {
				// A refused set makes the client unusable before consent:
				// the document itself is refused (a duplicate name anywhere
				// in it, for instance) or its keys are, and the client never
				// gets a code.
				if !tt.Refused {
					t.Fatalf("authorize: %d %s", resp.StatusCode, loc)
				}
				return
			}
			if tt.Refused {
				t.Fatalf("authorize issued a code to a client whose jwks is refused: %s", loc)
			}
			res := h.token(url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "code_verifier": {v},
				"redirect_uri": {cimdCB}, "client_id": {clientID}, "client_assertion_type": {jwtassert.ClientAssertionType},
				"client_assertion": {caseAssertion(t, h, tt, clientID)}}, "", "")
			wantCaseResult(t, tt, res)
		})
	}
}
