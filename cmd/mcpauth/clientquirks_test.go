package main

import (
	"context"
	"flag"
	"io"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/client"
)

// TestAuthParamFlags: --auth-param parses NAME=VALUE once per name and is
// bound to --issuer.
func TestAuthParamFlags(t *testing.T) {
	t.Parallel()
	const iss = "https://hydra.example.com"
	tests := []struct {
		name    string
		args    []string
		issuer  string
		want    map[string]client.AuthServerOptions
		wantErr string
	}{
		{"none", nil, iss, nil, ""},
		{"audience", []string{"--auth-param", "audience=https://mcp.example.com/mcp"}, iss,
			map[string]client.AuthServerOptions{iss: {AuthorizationParams: url.Values{"audience": {"https://mcp.example.com/mcp"}}}}, ""},
		{"two names", []string{"--auth-param", "audience=a", "--auth-param", "prompt=consent"}, iss,
			map[string]client.AuthServerOptions{iss: {AuthorizationParams: url.Values{"audience": {"a"}, "prompt": {"consent"}}}}, ""},
		{"no value", []string{"--auth-param", "audience"}, iss, nil, "want NAME=VALUE"},
		{"empty value", []string{"--auth-param", "audience="}, iss, nil, "want NAME=VALUE"},
		{"twice", []string{"--auth-param", "audience=a", "--auth-param", "audience=b"}, iss, nil, "audience given twice"},
		{"plain http issuer", []string{"--auth-param", "audience=a"}, "http://hydra.example.com", nil, "--issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a authParamFlags
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			a.register(fs)
			err := fs.Parse(tt.args)
			var got map[string]client.AuthServerOptions
			if err == nil {
				got, err = a.authServers(context.Background(), tt.issuer, "https://mcp.example.com/mcp", false)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestAuthParamLogin: `login --auth-param` finds the authorization server
// in the resource's metadata and logs in; a parameter the client sets
// itself is refused before any request.
func TestAuthParamLogin(t *testing.T) {
	t.Parallel()
	_, u := startDemo(t)
	common := []string{"--insecure-http", "--store", filepath.Join(t.TempDir(), "tokens.json"), "--browser", "http"}
	code, out, errOut := runCmd(t, append(append([]string{"login"}, common...), "--auth-param", "audience="+u, u)...)
	if code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("login: %d %q %s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, append(append([]string{"login"}, common...), "--auth-param", "resource=https://evil.example", u)...)
	if code == 0 || !strings.Contains(errOut, `"resource" is set by the client itself`) {
		t.Fatalf("login with --auth-param resource: %d %s", code, errOut)
	}
}

// TestQuirkFlags: --assume-s256, --omit-resource and --resource-scope
// become the options of the issuer they are bound to, alone or with
// --auth-param.
func TestQuirkFlags(t *testing.T) {
	t.Parallel()
	const iss = "https://login.microsoftonline.com/tid/v2.0"
	const def = "api://11111111-2222-3333-4444-555555555555/.default"
	tests := []struct {
		name    string
		args    []string
		want    map[string]client.AuthServerOptions
		wantErr string
	}{
		{"assume-s256", []string{"--assume-s256"}, map[string]client.AuthServerOptions{iss: {AssumeS256: true}}, ""},
		{"omit-resource", []string{"--omit-resource"}, map[string]client.AuthServerOptions{iss: {OmitResource: true}}, ""},
		{"resource-scope", []string{"--resource-scope", def}, map[string]client.AuthServerOptions{iss: {ResourceScopes: []string{def}}}, ""},
		{"two resource scopes", []string{"--resource-scope", "api://a/x", "--resource-scope", "api://a/y"},
			map[string]client.AuthServerOptions{iss: {ResourceScopes: []string{"api://a/x", "api://a/y"}}}, ""},
		{"entra", []string{"--assume-s256", "--omit-resource", "--resource-scope", def, "--auth-param", "domain_hint=example.com"},
			map[string]client.AuthServerOptions{iss: {AssumeS256: true, OmitResource: true, ResourceScopes: []string{def},
				AuthorizationParams: url.Values{"domain_hint": {"example.com"}}}}, ""},
		{"resource scope twice", []string{"--resource-scope", def, "--resource-scope", def}, nil, "given twice"},
		{"bool with a value", []string{"--assume-s256=maybe"}, nil, "invalid boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a authParamFlags
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			a.register(fs)
			err := fs.Parse(tt.args)
			var got map[string]client.AuthServerOptions
			if err == nil {
				got, err = a.authServers(context.Background(), iss, "https://mcp.example.com/mcp", false)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestQuirkFlagsLogin: the flags find the authorization server in the
// resource's metadata; --assume-s256 changes nothing at a server that
// lists S256; a /.default scope with another is refused before any
// request; without --issuer and a reachable resource the flags name
// themselves in the error.
func TestQuirkFlagsLogin(t *testing.T) {
	t.Parallel()
	_, u := startDemo(t)
	common := []string{"--insecure-http", "--store", filepath.Join(t.TempDir(), "tokens.json"), "--browser", "http"}
	code, out, errOut := runCmd(t, append(append([]string{"login"}, common...), "--assume-s256", u)...)
	if code != 0 || !strings.Contains(out, "logged in") {
		t.Fatalf("login --assume-s256: %d %q %s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, append(append([]string{"login"}, common...), "--resource-scope", "api://a/.default", "--resource-scope", "api://a/x", u)...)
	if code == 0 || !strings.Contains(errOut, "ResourceScopes") {
		t.Fatalf("login with /.default and another scope: %d %s", code, errOut)
	}
	code, _, errOut = runCmd(t, append(append([]string{"login"}, common...), "--omit-resource", "http://127.0.0.1:1/mcp")...)
	if code == 0 || !strings.Contains(errOut, "--omit-resource without --issuer") {
		t.Fatalf("login --omit-resource at an unreachable server: %d %s", code, errOut)
	}
}
