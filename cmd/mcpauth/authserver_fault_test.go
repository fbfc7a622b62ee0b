package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/pkce"
)

// TestAuthserverInsecureFault runs `mcpauth authserver --insecure-fault
// wrong-iss --insecure-fault omit-pkce-methods`: the metadata leaves the
// PKCE methods out and the authorization response carries the wrong iss,
// while the server still requires PKCE.
func TestAuthserverInsecureFault(t *testing.T) {
	t.Parallel()
	issuer, stop := startAuthserverIssuer(t, "--insecure-http", "--consent", "auto",
		"--client", "id=app,redirect=http://127.0.0.1/callback",
		"--insecure-fault", "wrong-iss", "--insecure-fault", "omit-pkce-methods")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer hc.CloseIdleConnections()

	resp, err := hc.Get(issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	err = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if _, listed := md["code_challenge_methods_supported"]; err != nil || listed || md["issuer"] != issuer {
		t.Fatalf("metadata %v (%v)", md, err)
	}
	authorize := func(challenge string) *url.URL {
		q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"http://127.0.0.1/callback"}}
		if challenge != "" {
			q.Set("code_challenge", challenge)
			q.Set("code_challenge_method", "S256")
		}
		resp, err := hc.Get(issuer + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound {
			t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		return loc
	}
	if q := authorize(pkce.Challenge(pkce.GenerateVerifier())).Query(); q.Get("iss") != authservertest.WrongIssuer || q.Get("code") == "" {
		t.Fatalf("authorization response %v", q)
	}
	if q := authorize("").Query(); q.Get("error") != "invalid_request" || q.Get("iss") != authservertest.WrongIssuer {
		t.Fatalf("authorization without PKCE: %v", q)
	}
	if code, errOut := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errOut)
	}
}
