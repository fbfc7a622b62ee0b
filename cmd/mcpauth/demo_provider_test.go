package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/pkce"
)

// TestDemoOAuthProvider checks that the demo's loopback provider is an
// honest one: PKCE S256 required and verified, codes bound to the
// registered redirect URI and client and usable once, iss on every
// answer, the user-info endpoint only for its tokens.
func TestDemoOAuthProvider(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	const redirectURI = "http://127.0.0.1/cb"
	p := newDemoOAuthProvider(srv.URL+"/idp", "as", demoProviderUser{ID: "u1", Login: "u1"}, "tok-")
	p.mount(mux, "/idp")
	p.register(redirectURI)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := pkce.GenerateVerifier()

	authorize := func(t *testing.T, q url.Values) (int, url.Values) {
		t.Helper()
		resp, err := hc.Get(srv.URL + "/idp/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := resp.Location()
		if loc == nil {
			return resp.StatusCode, nil
		}
		return resp.StatusCode, loc.Query()
	}
	good := func() url.Values {
		return url.Values{"client_id": {"as"}, "redirect_uri": {redirectURI}, "response_type": {"code"}, "state": {"s1"},
			"code_challenge": {pkce.Challenge(verifier)}, "code_challenge_method": {"S256"}}
	}
	for _, tc := range []struct {
		name      string
		change    func(url.Values)
		status    int
		wantError string
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "other") }, http.StatusBadRequest, ""},
		{"other redirect URI", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1/other") }, http.StatusBadRequest, ""},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, http.StatusFound, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, http.StatusFound, "invalid_request"},
		{"token response type", func(q url.Values) { q.Set("response_type", "token") }, http.StatusFound, "unsupported_response_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := good()
			tc.change(q)
			status, back := authorize(t, q)
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if tc.wantError != "" && (back.Get("error") != tc.wantError || back.Get("iss") != p.issuer || back.Get("code") != "") {
				t.Errorf("redirect %v, want error %s with iss and no code", back, tc.wantError)
			}
		})
	}

	token := func(t *testing.T, secret, code, verifier string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/idp/token", strings.NewReader(url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("as", secret)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	code := func(t *testing.T) string {
		t.Helper()
		status, back := authorize(t, good())
		if status != http.StatusFound || back.Get("code") == "" || back.Get("state") != "s1" || back.Get("iss") != p.issuer {
			t.Fatalf("authorize: %d %v", status, back)
		}
		return back.Get("code")
	}
	if status, body := token(t, "wrong", code(t), verifier); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("wrong secret: %d %v", status, body)
	}
	if status, body := token(t, p.secret, code(t), pkce.GenerateVerifier()); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", status, body)
	}
	c := code(t)
	status, body := token(t, p.secret, c, verifier)
	tok, _ := body["access_token"].(string)
	if status != http.StatusOK || !strings.HasPrefix(tok, "tok-") {
		t.Fatalf("token: %d %v", status, body)
	}
	if status, body := token(t, p.secret, c, verifier); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("code used twice: %d %v", status, body)
	}

	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"its token", "Bearer " + tok, http.StatusOK},
		{"no token", "", http.StatusUnauthorized},
		{"another token", "Bearer tok-forged", http.StatusUnauthorized},
	} {
		t.Run("user "+tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/idp/user", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var u demoProviderUser
			_ = json.NewDecoder(resp.Body).Decode(&u)
			if resp.StatusCode != tc.status || tc.status == http.StatusOK && u.ID != "u1" {
				t.Errorf("%d %+v, want %d", resp.StatusCode, u, tc.status)
			}
		})
	}
}
