package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestDPoPRefusedBeforeAuthorization: when the resource accepts only
// DPoP-bound tokens and they cannot be had, the client fails with
// errDPoPUnsupported after discovery and before any registration,
// authorization or token request: the test fails if anything but the
// authorization server's metadata is fetched.
func TestDPoPRefusedBeforeAuthorization(t *testing.T) {
	t.Parallel()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		dpop      *client.DPoPConfig
		asAlgs    []string
		prmAlgs   []string
		required  bool
		challenge string
	}{
		{"RFC9449 §7.1 DPoP-only challenge, key alg not in its algs", &client.DPoPConfig{Key: p384}, []string{"ES256", "ES384"}, nil, false,
			`DPoP algs="ES256"`},
		{"RFC9728 dpop_bound_access_tokens_required, key alg not in the metadata", &client.DPoPConfig{Key: p384}, []string{"ES384"}, []string{"ES256"}, true,
			`Bearer, DPoP algs="ES256"`},
		{"RFC9449 §5.1 authorization server without DPoP", &client.DPoPConfig{}, nil, []string{"ES256"}, true, `DPoP algs="ES256"`},
		{"no algorithm both servers accept", &client.DPoPConfig{}, []string{"RS256"}, nil, false, `DPoP algs="ES256 EdDSA"`},
		{"client without DPoP configuration", nil, []string{"ES256"}, nil, false, `DPoP algs="ES256"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAS(t, oauthtest.ASOptions{DPoPAlgs: tt.asAlgs})
			var rsURL string
			rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(oauthmeta.ProtectedResourceMetadata{Resource: rsURL, AuthorizationServers: []string{as.URL},
						DPoPSigningAlgValuesSupported: tt.prmAlgs, DPoPBoundAccessTokensRequired: tt.required})
					return
				}
				w.Header().Set("WWW-Authenticate", tt.challenge)
				w.WriteHeader(http.StatusUnauthorized)
			}))
			t.Cleanup(rs.Close)
			rsURL = rs.URL + "/mcp"
			c := newClient(t, oauthtest.NewClock(oauthtest.Epoch()), func(c *client.Config) { c.DPoP = tt.dpop })
			resp, err := call(t, c, rsURL)
			if !errors.Is(err, errDPoPUnsupported) {
				t.Fatalf("call: %v %v, want errDPoPUnsupported", resp, err)
			}
			if tt.required { // Login sees no challenge: only the metadata tells
				if err := c.Login(context.Background(), rsURL); !errors.Is(err, errDPoPUnsupported) {
					t.Fatalf("Login: %v, want errDPoPUnsupported", err)
				}
			}
			for _, p := range as.Paths() {
				if !strings.HasPrefix(p, "/.well-known/") {
					t.Fatalf("authorization server hit at %s; only its metadata may be fetched", p)
				}
			}
		})
	}
}

// countingRS serves an MCP endpoint behind package resource (DPoP
// required, server nonces on) and counts the requests to it.
type countingRS struct {
	url      string
	requests atomic.Int32
	nonce401 atomic.Int32
}

func startCountingRS(t *testing.T, clock *oauthtest.Clock, issuer string) *countingRS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := &countingRS{url: "http://" + ln.Addr().String() + "/mcp"}
	v, err := resource.New(resource.Config{Resource: rs.url, Issuers: []resource.Issuer{{Issuer: issuer}}, ScopesSupported: []string{"mcp"},
		InsecureAllowHTTPLoopback: true, Now: clock.Now,
		DPoP: resource.DPoPConfig{Mode: resource.DPoPRequired, VerifierConfig: dpop.VerifierConfig{NonceKey: []byte(strings.Repeat("k", 32))}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			rs.requests.Add(1)
		}
		rec := &statusRecorder{ResponseWriter: w}
		mux.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized && strings.Contains(w.Header().Get("WWW-Authenticate"), "use_dpop_nonce") {
			rs.nonce401.Add(1)
		}
	}))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() { hs.Close(); v.Close() })
	return rs
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

// TestDPoPNonceFromFirst401: the DPoP-Nonce of the resource's first 401
// (to the request without a token) goes into the first proof sent with
// the new token (RFC 9449 §9), so that request is accepted with no
// use_dpop_nonce round trip: two requests to the resource in all. The key
// is generated (no Config.DPoP.Key) and kept with the token: a second
// client on the same file store presents the token without authorizing.
func TestDPoPNonceFromFirst401(t *testing.T) {
	t.Parallel()
	for _, door := range []string{"Transport", "OAuthHandler.HTTPClient"} {
		t.Run(door, func(t *testing.T) {
			t.Parallel()
			clock := oauthtest.NewClock(oauthtest.Epoch())
			var authorizations atomic.Int32
			_, issuer := startAS(t, clock, func(c *authserver.Config) { c.DPoP = &authserver.DPoPConfig{} })
			rs := startCountingRS(t, clock, issuer)
			store, err := tokenstore.NewFile(filepath.Join(t.TempDir(), "tokens.json"))
			if err != nil {
				t.Fatal(err)
			}
			mk := func() *client.Client {
				return newClient(t, clock, func(c *client.Config) {
					c.Store, c.DPoP = store, &client.DPoPConfig{}
					c.Authorizer = countAuthorizations(&authorizations)
				})
			}
			first := mk()
			if status := callThrough(t, first, rs.url, door); status != http.StatusOK {
				t.Fatalf("first call: status %d", status)
			}
			if n, m := rs.requests.Load(), rs.nonce401.Load(); n != 2 || m != 0 {
				t.Fatalf("RFC9449 §9: %d requests to the resource (%d use_dpop_nonce), want 2 (0)", n, m)
			}
			if status := callThrough(t, mk(), rs.url, door); status != http.StatusOK {
				t.Fatalf("second client: status %d", status)
			}
			if n := authorizations.Load(); n != 1 {
				t.Fatalf("%d authorizations, want 1: the stored key was not reused", n)
			}
		})
	}
}

// callThrough POSTs to the resource through one of the client's doors and
// returns the status.
func callThrough(t *testing.T, c *client.Client, u, door string) int {
	t.Helper()
	if door == "Transport" {
		resp, err := call(t, c, u)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	h, err := c.OAuthHandler(u)
	if err != nil {
		t.Fatal(err)
	}
	hc := h.HTTPClient(nil)
	ctx := context.Background()
	for range 2 { // what the SDK does: send, Authorize on 401, send again
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		ts, err := h.TokenSource(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ts != nil {
			tok, err := ts.Token()
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			resp.Body.Close()
			return resp.StatusCode
		}
		if err := h.Authorize(ctx, req, resp); err != nil {
			t.Fatal(err)
		}
	}
	return http.StatusUnauthorized
}

// countAuthorizations is FollowRedirects counting its authorizations.
func countAuthorizations(n *atomic.Int32) client.Authorizer {
	return authorizerFunc(func(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
		n.Add(1)
		return (&client.FollowRedirects{}).Authorize(ctx, req)
	})
}

type authorizerFunc func(context.Context, *client.AuthorizationRequest) (*url.URL, error)

func (f authorizerFunc) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	return f(ctx, req)
}
