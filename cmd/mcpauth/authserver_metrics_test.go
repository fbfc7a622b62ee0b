package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestAuthserverMetrics: real token requests at a server whose Observer is
// the command's metrics show up as grants by type and outcome, refusals by
// error code and latencies.
func TestAuthserverMetrics(t *testing.T) {
	t.Parallel()
	m := newASMetrics()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	as, err := authserver.New(authserver.Config{
		Issuer: issuer, InsecureAllowHTTPLoopback: true, Scopes: []string{"mcp:read"},
		Clients: []authserver.Client{{ID: "svc", Secret: "s3cret-value",
			GrantTypes: []string{oauthmeta.GrantTypeClientCredentials, oauthmeta.GrantTypeRefreshToken}}},
		Observer: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	srv.Config.Handler = as
	srv.Start()
	defer srv.Close()
	post := func(path, secret string, form url.Values) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("svc", secret)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cc := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}}
	for range 2 {
		if code := post("/token", "s3cret-value", cc); code != http.StatusOK {
			t.Fatalf("client_credentials: %d", code)
		}
	}
	if code := post("/token", "wrong", cc); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if code := post("/token", "s3cret-value", url.Values{"grant_type": {"urn:example:made-up"}}); code != http.StatusBadRequest {
		t.Fatalf("unknown grant: %d", code)
	}
	if code := post("/token", "s3cret-value", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"nope"}}); code != http.StatusBadRequest {
		t.Fatalf("bad refresh token: %d", code)
	}
	if code := post("/revoke", "s3cret-value", url.Values{"token": {"nope"}}); code != http.StatusOK {
		t.Fatalf("revocation: %d", code)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := rec.Body.String()
	for _, want := range []string{
		`mcpauth_authserver_grants_total{grant_type="client_credentials",outcome="ok"} 2`,
		`mcpauth_authserver_grants_total{grant_type="client_credentials",outcome="invalid_client"} 1`,
		`mcpauth_authserver_grants_total{grant_type="unknown",outcome="unsupported_grant_type"} 1`,
		`mcpauth_authserver_grants_total{grant_type="refresh_token",outcome="invalid_grant"} 1`,
		`mcpauth_authserver_refusals_total{endpoint="token",reason="invalid_client"} 1`,
		`mcpauth_authserver_refusals_total{endpoint="token",reason="invalid_grant"} 1`,
		`mcpauth_authserver_request_duration_seconds_count{endpoint="token"} 5`,
		`mcpauth_authserver_request_duration_seconds_count{endpoint="revocation"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, "s3cret") || strings.Contains(out, "made-up") || strings.Contains(out, "nope") {
		t.Error("metrics hold request data")
	}
	if t.Failed() {
		t.Logf("%s", out)
	}
}
