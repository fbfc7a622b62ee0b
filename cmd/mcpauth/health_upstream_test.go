package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestReadyzTrustedIssuers: /readyz of authserver has a "trusted_issuers" check
// that fails while a trusted issuer's JWK Set cannot be had, answering
// its name and "fail" only and logging which issuer and why.
func TestReadyzTrustedIssuers(t *testing.T) {
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	up := oauthtest.NewPlainJWKSServer(t, key)
	down := oauthtest.NewPlainJWKSServer(t, key)
	down.SetStatus(http.StatusServiceUnavailable)
	for _, tc := range []struct {
		name   string
		jwks   *oauthtest.JWKSServer
		status int
		body   string
	}{
		{"issuer up", up, http.StatusOK, `{"status":"ok","checks":{"signing_keys":"ok","storage":"ok","trusted_issuers":"ok"}}`},
		{"issuer down", down, http.StatusServiceUnavailable, `{"status":"fail","checks":{"signing_keys":"ok","storage":"ok","trusted_issuers":"fail"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServing(t, serveAuthserver, "--addr", "127.0.0.1:0", "--insecure-http", "--admin-addr", "127.0.0.1:0",
				"--trusted-idjag-issuer", tc.jwks.Issuer+"="+tc.jwks.JWKSURI)
			resp, err := http.Get(s.admin + pathReadyz)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || strings.TrimSpace(string(body)) != tc.body {
				t.Fatalf("readyz %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.status == http.StatusOK {
				return
			}
			logs := s.logs.String()
			if !strings.Contains(logs, "check=trusted_issuers") || !strings.Contains(logs, tc.jwks.Issuer) {
				t.Errorf("the failed check and its issuer are not logged:\n%s", logs)
			}
		})
	}
}
