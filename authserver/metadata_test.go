package authserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// serve runs one request against s without a listener.
func serve(s http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func mustNew(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMetadataGolden covers requirements AS-02, AS-03 and AS-15: the
// document, compared with testdata/metadata.json.
func TestMetadataGolden(t *testing.T) {
	t.Parallel()
	s := mustNew(t, Config{Issuer: "https://as.example.com/tenant1", Scopes: []string{"mcp:read", "mcp:write"}, DPoP: &DPoPConfig{}})
	rec := serve(s, http.MethodGet, "https://as.example.com/.well-known/oauth-authorization-server/tenant1")
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("AS-02: %d %v", rec.Code, rec.Header())
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, "metadata.json", doc)
	m, err := oauthmeta.ParseAuthServerMetadata(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate("https://as.example.com/tenant1", oauthmeta.URLPolicy{}); err != nil {
		t.Fatalf("AS-02: a strict client would refuse the metadata: %v", err)
	}
	if !m.SupportsS256() || !m.AuthorizationResponseISSParameterSupported || !m.ClientIDMetadataDocumentSupported ||
		!m.SupportsResponseType("code") || !slices.Equal(m.ResponseTypesSupported, []string{"code"}) {
		t.Fatalf("AS-03 AS-06 AS-15: %+v", m)
	}
}

// TestMetadataLocations covers requirements AS-02 and AS-03: every
// discovery URL MCP clients probe answers with the same document, for
// issuers with and without a path, and the root URL is not mistaken for a
// path issuer's.
func TestMetadataLocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		issuer  string
		found   []string
		missing []string
	}{
		{"AS-02 issuer without path", "https://as.example.com",
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"},
			[]string{"/tenant1/.well-known/openid-configuration"}},
		{"AS-02 issuer with path", "https://as.example.com/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"},
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"AS-02 issuer with nested path", "https://as.example.com/a/b",
			[]string{"/.well-known/oauth-authorization-server/a/b", "/a/b/.well-known/openid-configuration"},
			[]string{"/.well-known/oauth-authorization-server/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustNew(t, Config{Issuer: tt.issuer})
			for _, p := range tt.found {
				rec := serve(s, http.MethodGet, "https://as.example.com"+p)
				if rec.Code != http.StatusOK {
					t.Fatalf("%s: %d", p, rec.Code)
				}
				m, err := oauthmeta.ParseAuthServerMetadata(rec.Body.Bytes())
				if err != nil || m.Issuer != tt.issuer || !m.SupportsS256() {
					t.Fatalf("AS-03 %s: %v %+v", p, err, m)
				}
			}
			for _, p := range tt.missing {
				if rec := serve(s, http.MethodGet, "https://as.example.com"+p); rec.Code != http.StatusNotFound {
					t.Fatalf("%s: %d, want 404", p, rec.Code)
				}
			}
		})
	}
}

// TestMetadataOptionalFeatures: registration and CIMD disappear from the
// metadata when turned off (requirement AS-15 advertises only what is
// supported).
func TestMetadataOptionalFeatures(t *testing.T) {
	t.Parallel()
	s := mustNew(t, Config{Issuer: "https://as.example.com", DisableRegistration: true, DisableClientIDMetadataDocuments: true})
	m := s.Metadata()
	if m.RegistrationEndpoint != "" || m.ClientIDMetadataDocumentSupported {
		t.Fatalf("%+v", m)
	}
	if rec := serve(s, http.MethodPost, "https://as.example.com/register"); rec.Code != http.StatusNotFound {
		t.Fatalf("register: %d", rec.Code)
	}
}

// TestMetadataGrantProfiles: the served document lists the ID-JAG
// authorization grant profile exactly when ID-JAGs are accepted with the
// JWT-bearer grant (Enterprise-Managed Authorization §6), and omits the
// member otherwise: workload identity alone, or the IdP role, which issues
// ID-JAGs but does not accept them.
func TestMetadataGrantProfiles(t *testing.T) {
	t.Parallel()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := &priv.PublicKey
	workload := TrustedIssuer{Issuer: "https://oidc.platform.example.com", PublicKeys: []crypto.PublicKey{key},
		Rules: []WorkloadRule{{Subject: "*", Resources: []string{"https://mcp.example.com"}, Scopes: []string{"mcp:read"}}}}
	idjag := TrustedIssuer{Issuer: "https://idp.example.com", Kind: GrantIDJAG, PublicKeys: []crypto.PublicKey{key}}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		profile bool
	}{
		{"no trusted issuers", nil, false},
		{"workload identity only", func(c *Config) { c.TrustedIssuers = []TrustedIssuer{workload} }, false},
		{"ID-JAG issuer", func(c *Config) { c.TrustedIssuers = []TrustedIssuer{idjag} }, true},
		{"both", func(c *Config) { c.TrustedIssuers = []TrustedIssuer{workload, idjag} }, true},
		{"identity provider role", func(c *Config) {
			c.Clients = []Client{{ID: "app", Secret: "s", GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}}}
			c.IdentityProvider = &IdentityProviderConfig{
				IDTokenIssuers: []TrustedIssuer{{Issuer: "https://sso.example.com", PublicKeys: []crypto.PublicKey{key}}},
				Audiences:      []IDJAGAudience{{Issuer: "https://auth.mcp.example.com", ClientIDs: map[string]string{"app": "app"}}},
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Issuer: "https://as.example.com", Scopes: []string{"mcp:read"}}
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			s := mustNew(t, cfg)
			rec := serve(s, http.MethodGet, "https://as.example.com/.well-known/oauth-authorization-server")
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			raw, present := doc["authorization_grant_profiles_supported"]
			m, err := oauthmeta.ParseAuthServerMetadata(rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case !tc.profile && present:
				t.Fatalf("authorization_grant_profiles_supported %s published", raw)
			case tc.profile && !slices.Equal(m.AuthorizationGrantProfilesSupported, []string{oauthmeta.GrantProfileIDJAG}):
				t.Fatalf("authorization_grant_profiles_supported %s, want [%q]", raw, oauthmeta.GrantProfileIDJAG)
			case tc.profile && !m.SupportsGrantType(oauthmeta.GrantTypeJWTBearer):
				t.Fatalf("the profile is listed without the JWT-bearer grant: %v", m.GrantTypesSupported)
			}
		})
	}
}

// TestConfigValidation covers requirement AS-13 (https issuers; loopback
// http only behind the insecure switch) and the other configuration checks.
func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cb := []string{"http://127.0.0.1/cb"}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"missing issuer", Config{}},
		{"AS-13 http issuer without the insecure switch", Config{Issuer: "http://127.0.0.1:9000"}},
		{"AS-13 http to a non-loopback host even with the switch", Config{Issuer: "http://as.example.com", InsecureAllowHTTPLoopback: true}},
		{"issuer with query", Config{Issuer: "https://as.example.com?x=1"}},
		{"issuer with fragment", Config{Issuer: "https://as.example.com#x"}},
		{"issuer path with odd characters", Config{Issuer: "https://as.example.com/a%20b"}},
		{"unknown algorithm", Config{Issuer: "https://as.example.com", SigningAlgorithm: "HS256"}},
		{"code TTL over 10 minutes", Config{Issuer: "https://as.example.com", CodeTTL: 11 * time.Minute}},
		{"negative token TTL", Config{Issuer: "https://as.example.com", AccessTokenTTL: -1}},
		{"invalid scope", Config{Issuer: "https://as.example.com", Scopes: []string{"a b"}}},
		{"default scope not supported", Config{Issuer: "https://as.example.com", Scopes: []string{"a"}, DefaultScopes: []string{"b"}}},
		{"bad resource", Config{Issuer: "https://as.example.com", Resources: []string{"https://h/mcp#x"}}},
		{"AS-17 client_id that looks like a URL", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "https://c/x", RedirectURIs: cb}}}},
		{"client without redirect", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "c"}}}},
		{"client with javascript redirect", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "c", RedirectURIs: []string{"javascript:x"}}}}},
		{"secret with none", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "c", Secret: "s", AuthMethod: "none", RedirectURIs: cb}}}},
		{"post without secret", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "c", AuthMethod: "client_secret_post", RedirectURIs: cb}}}},
		{"unsupported grant", Config{Issuer: "https://as.example.com", Clients: []Client{{ID: "c", GrantTypes: []string{"implicit"}, RedirectURIs: cb}}}},
		{"unknown consent mode", Config{Issuer: "https://as.example.com", Consent: 7}},
		{"negative per-IP rate", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{PerIP: -1}}},
		{"NaN per-client rate", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{PerClient: math.NaN()}}},
		{"negative burst", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{Burst: -1}}},
		{"negative rate-limit bound", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{MaxTracked: -1}}},
		{"negative browser rate", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{PerIPBrowser: -1}}},
		{"NaN browser rate", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{PerIPBrowser: math.NaN()}}},
		{"negative browser burst", Config{Issuer: "https://as.example.com", RateLimit: RateLimit{BrowserBurst: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
	for _, ok := range []Config{
		{Issuer: "http://127.0.0.1:9000", InsecureAllowHTTPLoopback: true},
		{Issuer: "http://localhost:9000/tenant1", InsecureAllowHTTPLoopback: true},
		{Issuer: "https://as.example.com/"},
		{Issuer: "https://as.example.com", RateLimit: RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), Burst: 1, MaxTracked: 1}},
		{Issuer: "https://as.example.com", RateLimit: RateLimit{PerIPBrowser: math.Inf(1), BrowserBurst: 1}},
	} {
		mustNew(t, ok)
	}
	for _, in := range []string{"auto", "consent", "deny"} {
		m, err := ParseConsentMode(in)
		if err != nil || m.String() != in {
			t.Fatalf("ParseConsentMode(%s) = %v, %v", in, m, err)
		}
	}
	if _, err := ParseConsentMode("maybe"); !errors.Is(err, ErrConfig) {
		t.Fatal("ParseConsentMode accepted nonsense")
	}
}
