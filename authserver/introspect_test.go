package authserver

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestIntrospection covers requirement AS-18.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tok := h.tokens(url.Values{"scope": {"mcp:read"}, "resource": {testResource}})

	t.Run("AS-18 active access token", func(t *testing.T) {
		m, body := h.introspect(tok.AccessToken)
		want := map[string]any{
			"active": true, "scope": "mcp:read", "client_id": publicID, "sub": defaultSubject,
			"aud": testResource, "iss": h.issuer, "token_type": "Bearer",
		}
		for k, v := range want {
			if m[k] != v {
				t.Fatalf("%s = %v, want %v (%s)", k, m[k], v, body)
			}
		}
		if _, err := oauthmeta.ParseIntrospectionResponse(body); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("AS-18 active refresh token", func(t *testing.T) {
		m, body := h.introspect(tok.RefreshToken)
		if m["active"] != true || m["client_id"] != publicID || m["scope"] != "mcp:read" {
			t.Fatalf("%s", body)
		}
	})
	for _, tc := range []struct{ name, token string }{
		{"AS-18 unknown token", "garbage"},
		{"AS-18 JWT-shaped garbage", "eyJhbGciOiJFUzI1NiJ9.eyJ9.sig"},
		{"AS-18 tampered access token", tok.AccessToken[:len(tok.AccessToken)-4] + "AAAA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, body := h.introspect(tc.token); string(body) != `{"active":false}` {
				t.Fatalf("body %s, want exactly {\"active\":false}", body)
			}
		})
	}
	t.Run("AS-18 callers must authenticate", func(t *testing.T) {
		for _, c := range []struct {
			form       url.Values
			user, pass string
		}{
			{url.Values{"token": {tok.AccessToken}}, "", ""},
			{url.Values{"token": {tok.AccessToken}, "client_id": {publicID}}, "", ""},
			{url.Values{"token": {tok.AccessToken}}, basicID, "wrong"},
		} {
			resp, body := h.post(pathIntrospect, c.form, c.user, c.pass)
			if e, err := oauthmeta.ParseError(body); resp.StatusCode != http.StatusUnauthorized || err != nil || e.Code != oauthmeta.CodeInvalidClient {
				t.Fatalf("status %d %s", resp.StatusCode, body)
			}
		}
	})
	t.Run("missing token", func(t *testing.T) {
		resp, _ := h.post(pathIntrospect, url.Values{}, basicID, basicSecret)
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestIntrospectionForeignIssuer: a token signed by another instance (same
// algorithm, other key) is inactive (AS-18).
func TestIntrospectionForeignIssuer(t *testing.T) {
	t.Parallel()
	a := newHarness(t, "", nil)
	b := newHarness(t, "", nil)
	if _, body := a.introspect(b.tokens(nil).AccessToken); string(body) != `{"active":false}` {
		t.Fatalf("%s", body)
	}
}

// TestRevocation covers requirement AS-19.
func TestRevocation(t *testing.T) {
	t.Parallel()
	revoke := func(h *harness, token string, form url.Values, user, pass string) int {
		return h.revoke(t, token, form, user, pass)
	}
	t.Run("AS-19 garbage gets 200", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		if s := revoke(h, "garbage", nil, "", ""); s != 200 {
			t.Fatalf("status %d", s)
		}
		if s := revoke(h, "garbage", url.Values{"token_type_hint": {"something_else"}}, "", ""); s != 200 {
			t.Fatalf("unknown hint: %d", s)
		}
	})
	t.Run("AS-19 revoking a refresh token revokes the family", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		tok := h.tokens(nil)
		if s := revoke(h, tok.RefreshToken, url.Values{"token_type_hint": {"refresh_token"}}, "", ""); s != 200 {
			t.Fatalf("status %d", s)
		}
		if _, body := h.introspect(tok.AccessToken); string(body) != `{"active":false}` {
			t.Fatalf("AS-19: access token of the revoked family: %s", body)
		}
		res := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {publicID}}, "", "")
		wantError(t, res, 400, oauthmeta.CodeInvalidGrant)
	})
	t.Run("AS-19 revoking an access token", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		tok := h.tokens(nil)
		if s := revoke(h, tok.AccessToken, url.Values{"token_type_hint": {"access_token"}}, "", ""); s != 200 {
			t.Fatalf("status %d", s)
		}
		if _, body := h.introspect(tok.AccessToken); string(body) != `{"active":false}` {
			t.Fatalf("%s", body)
		}
		if m, _ := h.introspect(tok.RefreshToken); m["active"] != true {
			t.Fatal("revoking the access token revoked the refresh token too")
		}
	})
	t.Run("AS-19 another client's token is left alone", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		tok := h.tokens(nil)
		if s := revoke(h, tok.RefreshToken, url.Values{}, basicID, basicSecret); s != 200 {
			t.Fatalf("status %d", s)
		}
		if m, _ := h.introspect(tok.RefreshToken); m["active"] != true {
			t.Fatal("a client revoked another client's token")
		}
	})
	t.Run("AS-19 client authentication still applies", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		if s := revoke(h, "x", url.Values{}, basicID, "wrong"); s != http.StatusUnauthorized {
			t.Fatalf("status %d", s)
		}
		if s := revoke(h, "", url.Values{}, "", ""); s != http.StatusBadRequest {
			t.Fatalf("missing token: %d", s)
		}
	})
}

// revoke calls the revocation endpoint, as the public client unless
// Basic credentials or a client_id are given.
func (h *harness) revoke(t *testing.T, token string, form url.Values, user, pass string) int {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("token", token)
	if user == "" && !form.Has("client_id") {
		form.Set("client_id", publicID)
	}
	resp, body := h.post(pathRevoke, form, user, pass)
	if resp.StatusCode == http.StatusOK && len(body) != 0 {
		t.Fatalf("revocation body %q", body)
	}
	return resp.StatusCode
}
