package oauthmeta

import (
	"errors"
	"os"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
)

func TestProtectedResourceMetadataURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resource, want, wantRoot, wantOrigin string
		wantErr                              error
	}{
		{resource: "https://h/public/mcp", want: "https://h/.well-known/oauth-protected-resource/public/mcp", wantRoot: "https://h/.well-known/oauth-protected-resource", wantOrigin: "https://h"},
		{resource: "https://h", want: "https://h/.well-known/oauth-protected-resource", wantRoot: "https://h/.well-known/oauth-protected-resource", wantOrigin: "https://h"},
		{resource: "https://h/", want: "https://h/.well-known/oauth-protected-resource", wantRoot: "https://h/.well-known/oauth-protected-resource", wantOrigin: "https://h"},
		{resource: "https://h:8443/mcp/", want: "https://h:8443/.well-known/oauth-protected-resource/mcp", wantRoot: "https://h:8443/.well-known/oauth-protected-resource", wantOrigin: "https://h:8443"},
		{resource: "http://127.0.0.1:8080/a/mcp?t=1", want: "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp?t=1", wantRoot: "http://127.0.0.1:8080/.well-known/oauth-protected-resource", wantOrigin: "http://127.0.0.1:8080"},
		{resource: "https://h/mcp#frag", wantErr: ErrInvalidResource},
		{resource: "/mcp", wantErr: ErrInvalidResource},
		{resource: "", wantErr: ErrInvalidResource},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			t.Parallel()
			got, err := ProtectedResourceMetadataURL(tt.resource)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("URL = %q, want %q", got, tt.want)
			}
			root, origin, err := ProtectedResourceMetadataRootURL(tt.resource)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("root err = %v, want %v", err, tt.wantErr)
			}
			if root != tt.wantRoot || origin != tt.wantOrigin {
				t.Errorf("root = %q, %q; want %q, %q", root, origin, tt.wantRoot, tt.wantOrigin)
			}
		})
	}
}

// TestProtectedResourceMetadataValidate covers requirement CL-03 (resource
// identical to the URL requested) and CL-23 (no unsafe URLs accepted).
func TestProtectedResourceMetadataValidate(t *testing.T) {
	t.Parallel()
	good := func() *ProtectedResourceMetadata {
		return &ProtectedResourceMetadata{Resource: "https://h/mcp", AuthorizationServers: []string{"https://as"}}
	}
	tests := []struct {
		name    string
		mutate  func(*ProtectedResourceMetadata)
		expect  string
		policy  URLPolicy
		wantErr error
	}{
		{name: "ok", mutate: func(*ProtectedResourceMetadata) {}, expect: "https://h/mcp"},
		{name: "CL-03 other resource", mutate: func(m *ProtectedResourceMetadata) { m.Resource = "https://evil.example.com/mcp" }, expect: "https://h/mcp", wantErr: ErrResourceMismatch},
		{name: "CL-03 trailing slash is not identical", mutate: func(m *ProtectedResourceMetadata) { m.Resource = "https://h/mcp/" }, expect: "https://h/mcp", wantErr: ErrResourceMismatch},
		{name: "CL-03 case is not identical", mutate: func(m *ProtectedResourceMetadata) { m.Resource = "https://H/mcp" }, expect: "https://h/mcp", wantErr: ErrResourceMismatch},
		{name: "RS-01 no authorization servers", mutate: func(m *ProtectedResourceMetadata) { m.AuthorizationServers = nil }, expect: "https://h/mcp", wantErr: ErrMissingField},
		{name: "CL-23 authorization server over http", mutate: func(m *ProtectedResourceMetadata) { m.AuthorizationServers = []string{"http://as"} }, expect: "https://h/mcp", wantErr: ErrUnsafeURL},
		{name: "CL-23 loopback http needs the insecure switch", mutate: func(m *ProtectedResourceMetadata) { m.AuthorizationServers = []string{"http://127.0.0.1:9000"} }, expect: "https://h/mcp", wantErr: ErrUnsafeURL},
		{name: "loopback http allowed with switch", mutate: func(m *ProtectedResourceMetadata) { m.AuthorizationServers = []string{"http://127.0.0.1:9000"} }, expect: "https://h/mcp", policy: URLPolicy{InsecureAllowHTTPLoopback: true}},
		{name: "issuer with query", mutate: func(m *ProtectedResourceMetadata) { m.AuthorizationServers = []string{"https://as?x=1"} }, expect: "https://h/mcp", wantErr: ErrInvalidIssuer},
		{name: "javascript jwks_uri", mutate: func(m *ProtectedResourceMetadata) { m.JWKSURI = "javascript:alert(1)" }, expect: "https://h/mcp", wantErr: ErrUnsafeURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := good()
			tt.mutate(m)
			if err := m.Validate(tt.expect, tt.policy); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestParseProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{name: "minimal", in: `{"resource":"https://h/mcp","authorization_servers":["https://as"]}`},
		{name: "unknown members ignored", in: `{"resource":"https://h/mcp","x-vendor":{"a":1}}`},
		{name: "missing resource", in: `{"authorization_servers":["https://as"]}`, wantErr: ErrMissingField},
		{name: "duplicate resource", in: `{"resource":"https://h/mcp","resource":"https://evil/mcp"}`, wantErr: ErrMalformed},
		{name: "resource differs only in case of name", in: `{"Resource":"https://evil/mcp"}`, wantErr: ErrMissingField},
		{name: "authorization_servers not an array", in: `{"resource":"https://h","authorization_servers":"https://as"}`, wantErr: ErrMalformed},
		{name: "not an object", in: `["https://h"]`, wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseProtectedResourceMetadata([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestGoldenProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	m := ProtectedResourceMetadata{
		Resource:               "https://mcp.example.com/mcp",
		AuthorizationServers:   []string{"https://auth.example.com", "https://auth.example.com/tenant1"},
		ScopesSupported:        []string{"mcp:tools", "files:read", "files:write"},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Example MCP server",
	}
	golden.JSON(t, "protected_resource_metadata.json", m)
	data, err := os.ReadFile("testdata/protected_resource_metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseProtectedResourceMetadata(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate("https://mcp.example.com/mcp", URLPolicy{}); err != nil {
		t.Fatal(err)
	}
}

func FuzzProtectedResourceMetadata(f *testing.F) {
	if data, err := os.ReadFile("testdata/protected_resource_metadata.json"); err == nil {
		f.Add(data, "https://mcp.example.com/mcp")
	}
	f.Add([]byte(`{"resource":"http://127.0.0.1/mcp","authorization_servers":["http://127.0.0.1:9000"]}`), "http://127.0.0.1/mcp")
	f.Add([]byte(`{"resource":"x","resource":"y"}`), "x")
	f.Fuzz(func(t *testing.T, data []byte, expected string) {
		m, err := ParseProtectedResourceMetadata(data)
		if err != nil {
			return
		}
		for _, p := range []URLPolicy{{}, {InsecureAllowHTTPLoopback: true}} {
			if err := m.Validate(expected, p); err == nil {
				if m.Resource != expected {
					t.Fatalf("Validate accepted resource %q for %q", m.Resource, expected)
				}
				for _, as := range m.AuthorizationServers {
					if p.CheckIssuer(as) != nil {
						t.Fatalf("Validate accepted unsafe issuer %q", as)
					}
				}
			}
		}
		_, _ = ProtectedResourceMetadataURL(expected)
	})
}
