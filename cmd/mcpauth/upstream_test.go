package main

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"
)

func TestUpstreamFlags(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"IDP_SECRET": "s3cret"}[k] }
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"none", nil, ""},
		{"domain", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "env:IDP_SECRET", "--allow-email-domain", "example.com"}, ""},
		{"any user", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--allow-any-user"}, ""},
		{"no allow-list", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c"}, "say who may log in"},
		{"literal secret", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "s3cret", "--allow-any-user"}, "env:VAR"},
		{"empty env", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-secret", "env:NOPE", "--allow-any-user"}, "NOPE is empty"},
		{"allow without upstream", []string{"--allow-user", "a@example.com"}, "need --upstream"},
		{"key file missing", []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--upstream-client-key", "/nonexistent/key.pem", "--allow-any-user"}, "--upstream-client-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c, err := f.upstream.config(false, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "domain" && (c.ClientSecret != "s3cret" || !slices.Equal(c.Allow.EmailDomains, []string{"example.com"})) {
				t.Errorf("config %+v", c)
			}
		})
	}
	// The whole configuration is accepted by authserver.New's rules.
	f, _ := parseAuthserverFlags([]string{"--insecure-http", "--upstream", "http://127.0.0.1:9/idp", "--upstream-client-id", "c", "--allow-group", "staff"}, io.Discard)
	cfg, err := f.config(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000}, nil)
	if err != nil || cfg.Upstream == nil || !cfg.Upstream.Fetch.InsecureAllowHTTPLoopback {
		t.Fatalf("config: %v %+v", err, cfg.Upstream)
	}
}
