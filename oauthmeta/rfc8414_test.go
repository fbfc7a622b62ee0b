package oauthmeta

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
)

// TestAuthServerMetadataURLs covers requirement CL-06: the exact probe order.
func TestAuthServerMetadataURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		issuer  string
		want    []string
		wantErr error
	}{
		{issuer: "https://a/tenant1", want: []string{
			"https://a/.well-known/oauth-authorization-server/tenant1",
			"https://a/.well-known/openid-configuration/tenant1",
			"https://a/tenant1/.well-known/openid-configuration",
		}},
		{issuer: "https://a", want: []string{
			"https://a/.well-known/oauth-authorization-server",
			"https://a/.well-known/openid-configuration",
		}},
		{issuer: "https://a/", want: []string{
			"https://a/.well-known/oauth-authorization-server",
			"https://a/.well-known/openid-configuration",
		}},
		{issuer: "http://127.0.0.1:9000/t/x/", want: []string{
			"http://127.0.0.1:9000/.well-known/oauth-authorization-server/t/x",
			"http://127.0.0.1:9000/.well-known/openid-configuration/t/x",
			"http://127.0.0.1:9000/t/x/.well-known/openid-configuration",
		}},
		{issuer: "https://a?x=1", wantErr: ErrInvalidIssuer},
		{issuer: "https://a#f", wantErr: ErrInvalidIssuer},
		{issuer: "a/b", wantErr: ErrInvalidIssuer},
	}
	for _, tt := range tests {
		t.Run("CL-06 "+tt.issuer, func(t *testing.T) {
			t.Parallel()
			got, err := AuthServerMetadataURLs(tt.issuer)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestAuthServerMetadataValidate covers requirements CL-07 (identical issuer),
// CL-22 (no javascript: or other unsafe endpoints) and CL-08 (S256).
func TestAuthServerMetadataValidate(t *testing.T) {
	t.Parallel()
	good := func() *AuthServerMetadata {
		return &AuthServerMetadata{
			Issuer:                        "https://as.example.com/tenant1",
			AuthorizationEndpoint:         "https://as.example.com/authorize",
			TokenEndpoint:                 "https://as.example.com/token",
			ResponseTypesSupported:        []string{"code"},
			CodeChallengeMethodsSupported: []string{"S256"},
		}
	}
	tests := []struct {
		name    string
		mutate  func(*AuthServerMetadata)
		wantErr error
	}{
		{name: "ok", mutate: func(*AuthServerMetadata) {}},
		{name: "CL-07 other host names the honest issuer", mutate: func(m *AuthServerMetadata) { m.Issuer = "https://attacker.example/tenant1" }, wantErr: ErrIssuerMismatch},
		{name: "CL-07 trailing slash", mutate: func(m *AuthServerMetadata) { m.Issuer += "/" }, wantErr: ErrIssuerMismatch},
		{name: "CL-07 case", mutate: func(m *AuthServerMetadata) { m.Issuer = "https://AS.example.com/tenant1" }, wantErr: ErrIssuerMismatch},
		{name: "CL-22 javascript authorization endpoint", mutate: func(m *AuthServerMetadata) { m.AuthorizationEndpoint = "javascript:alert(1)" }, wantErr: ErrUnsafeURL},
		{name: "CL-22 data token endpoint", mutate: func(m *AuthServerMetadata) { m.TokenEndpoint = "data:text/html,x" }, wantErr: ErrUnsafeURL},
		{name: "CL-22 file registration endpoint", mutate: func(m *AuthServerMetadata) { m.RegistrationEndpoint = "file:///etc/passwd" }, wantErr: ErrUnsafeURL},
		{name: "CL-22 vbscript revocation endpoint", mutate: func(m *AuthServerMetadata) { m.RevocationEndpoint = "vbscript:msgbox" }, wantErr: ErrUnsafeURL},
		{name: "CL-23 http jwks", mutate: func(m *AuthServerMetadata) { m.JWKSURI = "http://169.254.169.254/latest" }, wantErr: ErrUnsafeURL},
		{name: "missing authorization endpoint", mutate: func(m *AuthServerMetadata) { m.AuthorizationEndpoint = "" }, wantErr: ErrMissingField},
		{name: "missing token endpoint", mutate: func(m *AuthServerMetadata) { m.TokenEndpoint = "" }, wantErr: ErrMissingField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := good()
			tt.mutate(m)
			if err := m.Validate("https://as.example.com/tenant1", URLPolicy{}); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestSupportsS256 covers requirement CL-08: no list, or plain only, is a no.
func TestSupportsS256(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		methods []string
		want    bool
	}{
		{nil, false},
		{[]string{}, false},
		{[]string{"plain"}, false},
		{[]string{"s256"}, false},
		{[]string{"plain", "S256"}, true},
	} {
		m := AuthServerMetadata{CodeChallengeMethodsSupported: tt.methods}
		if got := m.SupportsS256(); got != tt.want {
			t.Errorf("CL-08 SupportsS256(%q) = %v, want %v", tt.methods, got, tt.want)
		}
	}
}

func TestAuthServerMetadataDefaults(t *testing.T) {
	t.Parallel()
	var m AuthServerMetadata
	if !m.SupportsGrantType("authorization_code") || m.SupportsGrantType("refresh_token") {
		t.Error("RFC 8414 grant_types_supported default not applied")
	}
	if !m.SupportsTokenEndpointAuthMethod("client_secret_basic") || m.SupportsTokenEndpointAuthMethod("none") {
		t.Error("RFC 8414 token_endpoint_auth_methods_supported default not applied")
	}
	m.GrantTypesSupported = []string{"refresh_token"}
	m.TokenEndpointAuthMethodsSupported = []string{"none"}
	m.ScopesSupported = []string{"offline_access"}
	m.ResponseTypesSupported = []string{"code"}
	if m.SupportsGrantType("authorization_code") || !m.SupportsGrantType("refresh_token") ||
		!m.SupportsTokenEndpointAuthMethod("none") || !m.SupportsScope("offline_access") || !m.SupportsResponseType("code") {
		t.Error("listed values not honoured")
	}
}

func TestGoldenAuthServerMetadata(t *testing.T) {
	t.Parallel()
	m := AuthServerMetadata{
		Issuer:                            "https://auth.example.com",
		AuthorizationEndpoint:             "https://auth.example.com/authorize",
		TokenEndpoint:                     "https://auth.example.com/token",
		JWKSURI:                           "https://auth.example.com/jwks.json",
		RegistrationEndpoint:              "https://auth.example.com/register",
		ScopesSupported:                   []string{"mcp:tools", "files:read"},
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", GrantTypeJWTBearer},
		TokenEndpointAuthMethodsSupported: []string{"none", "client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		AuthorizationResponseISSParameterSupported: true,
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationGrantProfilesSupported:        []string{GrantProfileIDJAG},
	}
	golden.JSON(t, "authorization_server_metadata.json", m)
}

// TestRealWorldAuthServerMetadata parses documents shaped like those major
// providers publish, kept in the repository's top-level testdata/realworld.
func TestRealWorldAuthServerMetadata(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../testdata/realworld/as-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no real-world documents found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseAuthServerMetadata(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(m.Issuer, URLPolicy{}); err != nil {
				t.Fatal(err)
			}
			if !m.SupportsResponseType("code") {
				t.Error("response_types_supported lacks code")
			}
		})
	}
}

func FuzzAuthServerMetadata(f *testing.F) {
	files, _ := filepath.Glob("../testdata/realworld/as-*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data, "https://accounts.google.com")
		}
	}
	if data, err := os.ReadFile("testdata/authorization_server_metadata.json"); err == nil {
		f.Add(data, "https://auth.example.com")
	}
	f.Add([]byte(`{"issuer":"a","issuer":"b"}`), "a")
	f.Fuzz(func(t *testing.T, data []byte, expected string) {
		m, err := ParseAuthServerMetadata(data)
		if err != nil {
			return
		}
		if err := m.Validate(expected, URLPolicy{}); err == nil {
			if m.Issuer != expected {
				t.Fatalf("accepted issuer %q for %q", m.Issuer, expected)
			}
			for _, u := range []string{m.AuthorizationEndpoint, m.TokenEndpoint} {
				if (URLPolicy{}).CheckURL(u) != nil {
					t.Fatalf("accepted unsafe endpoint %q", u)
				}
			}
		}
		_, _ = AuthServerMetadataURLs(expected)
	})
}
