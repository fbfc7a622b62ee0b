package authserver

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// TestCodeExchange covers requirements AS-10 and AS-11: a valid exchange
// answers 200 JSON with no-store, and the access token is an RFC 9068 JWT
// whose aud is the requested resource.
func TestCodeExchange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	q, v := authParams(publicID, publicCB)
	q.Set("scope", "mcp:read mcp:write")
	q.Set("resource", testResource)
	res := h.exchange(h.code(q, v), v, publicCB, url.Values{"resource": {testResource}})
	if res.status != http.StatusOK {
		t.Fatalf("status %d: %s", res.status, res.body)
	}
	if res.header.Get("Cache-Control") != "no-store" || res.header.Get("Content-Type") != "application/json" {
		t.Fatalf("AS-10 headers: %v", res.header)
	}
	tok := res.tok
	if tok.TokenType != "Bearer" || tok.ExpiresIn != int64(DefaultAccessTokenTTL.Seconds()) || tok.RefreshToken == "" || tok.Scope != "mcp:read mcp:write" {
		t.Fatalf("AS-10 response: %+v", tok)
	}
	hdr, claims := h.verifyJWT(tok.AccessToken)
	if hdr.ExtraHeaders["typ"] != "at+jwt" || hdr.Algorithm != "ES256" || hdr.KeyID == "" {
		t.Fatalf("AS-11 header: %+v", hdr)
	}
	want := map[string]any{
		"iss": h.issuer, "sub": defaultSubject, "aud": testResource, "client_id": publicID,
		"scope": "mcp:read mcp:write", "iat": float64(h.clock.Now().Unix()),
		"exp": float64(h.clock.Now().Add(DefaultAccessTokenTTL).Unix()),
	}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("AS-11 claim %s = %v, want %v", k, claims[k], v)
		}
	}
	if jti, _ := claims["jti"].(string); jti == "" {
		t.Error("AS-11: no jti")
	}
}

// TestSigningAlgorithms covers requirement AS-11 for each algorithm.
func TestSigningAlgorithms(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"ES256", "RS256", "EdDSA"} {
		t.Run("AS-11 "+alg, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", func(c *Config) { c.SigningAlgorithm = alg })
			hdr, claims := h.verifyJWT(h.tokens(nil).AccessToken)
			if hdr.Algorithm != alg || hdr.ExtraHeaders["typ"] != "at+jwt" {
				t.Fatalf("header %+v", hdr)
			}
			if claims["aud"] != h.issuer {
				t.Fatalf("default audience = %v, want the issuer", claims["aud"])
			}
		})
	}
}

// TestCodeBinding covers requirements AS-04, AS-08, AS-09 and CIMD-09: the
// code is bound to client, redirect URI, verifier and resource.
func TestCodeBinding(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	tests := []struct {
		name   string
		mutate func(form url.Values) (user, pass string)
		status int
		want   oauthmeta.ErrorCode
	}{
		{"AS-04 missing verifier", func(f url.Values) (string, string) { f.Del("code_verifier"); return "", "" }, 400, oauthmeta.CodeInvalidGrant},
		{"AS-04 wrong verifier", func(f url.Values) (string, string) { f.Set("code_verifier", pkce.GenerateVerifier()); return "", "" }, 400, oauthmeta.CodeInvalidGrant},
		{"AS-04 verifier equal to the challenge (plain)", func(f url.Values) (string, string) {
			f.Set("code_verifier", f.Get("challenge"))
			return "", ""
		}, 400, oauthmeta.CodeInvalidGrant},
		{"AS-09 other redirect_uri", func(f url.Values) (string, string) {
			f.Set("redirect_uri", "http://127.0.0.1:1/callback")
			return "", ""
		}, 400, oauthmeta.CodeInvalidGrant},
		{"AS-09 redirect_uri omitted", func(f url.Values) (string, string) { f.Del("redirect_uri"); return "", "" }, 400, oauthmeta.CodeInvalidGrant},
		{"AS-09 CIMD-09 other client", func(f url.Values) (string, string) { f.Del("client_id"); return basicID, basicSecret }, 400, oauthmeta.CodeInvalidGrant},
		{"AS-08 resource outside the grant", func(f url.Values) (string, string) { f.Set("resource", "https://other.example.com/mcp"); return "", "" }, 400, oauthmeta.CodeInvalidTarget},
		{"AS-09 unknown code", func(f url.Values) (string, string) { f.Set("code", "nope"); return "", "" }, 400, oauthmeta.CodeInvalidGrant},
		{"AS-09 missing code", func(f url.Values) (string, string) { f.Del("code"); return "", "" }, 400, oauthmeta.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, v := authParams(publicID, publicCB)
			q.Set("resource", testResource)
			form := url.Values{
				"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v},
				"client_id": {publicID}, "redirect_uri": {publicCB}, "challenge": {q.Get("code_challenge")},
			}
			user, pass := tt.mutate(form)
			form.Del("challenge")
			res := h.token(form, user, pass)
			wantError(t, res, tt.status, tt.want)
			// The failed attempt did not burn the code: the rightful
			// redemption still works (except for the unknown-code cases).
			if form.Get("code") != "nope" && form.Has("code") {
				ok := h.exchange(form.Get("code"), v, publicCB, nil)
				if ok.status != http.StatusOK {
					t.Fatalf("rightful redemption after a failed attempt: %d %s", ok.status, ok.body)
				}
			}
		})
	}
}

// TestCodeReplay covers requirement AS-09: a second valid redemption is
// refused and revokes what the first produced; a replay with a bad verifier
// revokes nothing.
func TestCodeReplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)

	t.Run("AS-09 replay with the right verifier revokes", func(t *testing.T) {
		q, v := authParams(publicID, publicCB)
		code := h.code(q, v)
		first := h.exchange(code, v, publicCB, nil)
		if first.status != http.StatusOK {
			t.Fatalf("first: %d", first.status)
		}
		if m, _ := h.introspect(first.tok.AccessToken); m["active"] != true {
			t.Fatal("token inactive before the replay")
		}
		wantError(t, h.exchange(code, v, publicCB, nil), 400, oauthmeta.CodeInvalidGrant)
		if m, body := h.introspect(first.tok.AccessToken); m["active"] != false || len(m) != 1 {
			t.Fatalf("AS-09: first access token after replay: %s", body)
		}
		res := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.tok.RefreshToken}, "client_id": {publicID}}, "", "")
		wantError(t, res, 400, oauthmeta.CodeInvalidGrant)
	})

	t.Run("AS-09 replay with a bad verifier revokes nothing", func(t *testing.T) {
		q, v := authParams(publicID, publicCB)
		code := h.code(q, v)
		first := h.exchange(code, v, publicCB, nil)
		wantError(t, h.exchange(code, pkce.GenerateVerifier(), publicCB, nil), 400, oauthmeta.CodeInvalidGrant)
		if m, _ := h.introspect(first.tok.AccessToken); m["active"] != true {
			t.Fatal("AS-09: a replay with a wrong verifier revoked the grant")
		}
	})

	t.Run("AS-09 expired code", func(t *testing.T) {
		h := newHarness(t, "", nil)
		q, v := authParams(publicID, publicCB)
		code := h.code(q, v)
		h.clock.Advance(defaultCodeTTL)
		wantError(t, h.exchange(code, v, publicCB, nil), 400, oauthmeta.CodeInvalidGrant)
	})
}

// TestRefreshRotation covers requirement AS-12: rotation, reuse detection
// revoking the family, scope narrowing only, resource on refresh.
func TestRefreshRotation(t *testing.T) {
	t.Parallel()
	refresh := (*harness).refresh
	t.Run("AS-12 reuse revokes the family", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		rt1 := h.tokens(nil).RefreshToken
		r2 := refresh(h, rt1, nil)
		if r2.status != http.StatusOK || r2.tok.RefreshToken == "" || r2.tok.RefreshToken == rt1 {
			t.Fatalf("rotation: %d %s", r2.status, r2.body)
		}
		wantError(t, refresh(h, rt1, nil), 400, oauthmeta.CodeInvalidGrant)
		wantError(t, refresh(h, r2.tok.RefreshToken, nil), 400, oauthmeta.CodeInvalidGrant)
		if m, _ := h.introspect(r2.tok.AccessToken); m["active"] != false {
			t.Fatal("AS-12: access token of a revoked family is still active")
		}
	})
	t.Run("AS-12 refresh tokens and grants in separate stores", func(t *testing.T) {
		// Without one RefreshTokenUser holding both, the server reads the
		// token and its grant and rotates in three calls: same answers.
		t.Parallel()
		m := NewMemoryStore()
		h := newHarness(t, "", func(c *Config) {
			c.Storage = m.Storage()
			c.Storage.RefreshTokens = struct{ RefreshTokenStore }{m}
		})
		rt1 := h.tokens(nil).RefreshToken
		r2 := refresh(h, rt1, nil)
		if r2.status != http.StatusOK || r2.tok.RefreshToken == "" || r2.tok.RefreshToken == rt1 {
			t.Fatalf("rotation: %d %s", r2.status, r2.body)
		}
		wantError(t, refresh(h, rt1, nil), 400, oauthmeta.CodeInvalidGrant)
		wantError(t, refresh(h, r2.tok.RefreshToken, nil), 400, oauthmeta.CodeInvalidGrant)
	})
	t.Run("AS-12 scope may narrow, never widen", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		rt := h.tokens(url.Values{"scope": {"mcp:read mcp:write"}}).RefreshToken
		narrow := refresh(h, rt, url.Values{"scope": {"mcp:read"}})
		if narrow.status != http.StatusOK || narrow.tok.Scope != "mcp:read" {
			t.Fatalf("narrowing: %d %s", narrow.status, narrow.body)
		}
		wantError(t, refresh(h, narrow.tok.RefreshToken, url.Values{"scope": {"mcp:read mcp:admin"}}), 400, oauthmeta.CodeInvalidScope)
		// The family keeps the full grant: the next refresh without scope
		// gets both scopes back.
		full := refresh(h, narrow.tok.RefreshToken, nil)
		if full.status != http.StatusOK || full.tok.Scope != "mcp:read mcp:write" {
			t.Fatalf("after narrowing: %d %s", full.status, full.body)
		}
	})
	t.Run("AS-12 AS-08 resource on refresh", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		other := "https://other.example.com/mcp"
		rt := h.tokens(url.Values{"resource": {testResource, other}}).RefreshToken
		r := refresh(h, rt, url.Values{"resource": {other}})
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if _, claims := h.verifyJWT(r.tok.AccessToken); claims["aud"] != other {
			t.Fatalf("aud = %v, want %s", claims["aud"], other)
		}
		wantError(t, refresh(h, r.tok.RefreshToken, url.Values{"resource": {"https://third.example.com/mcp"}}), 400, oauthmeta.CodeInvalidTarget)
	})
}

// refresh uses a refresh token as the public client.
func (h *harness) refresh(rt string, extra url.Values) tokenResult {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}
	for k, v := range extra {
		form[k] = v
	}
	return h.token(form, "", "")
}

// TestRefreshBinding covers requirement AS-12: refresh tokens are bound to
// their client and expire with their family.
func TestRefreshBinding(t *testing.T) {
	t.Parallel()
	refresh := (*harness).refresh
	t.Run("AS-12 refresh bound to the client", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		rt := h.tokens(nil).RefreshToken
		res := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, basicID, basicSecret)
		wantError(t, res, 400, oauthmeta.CodeInvalidGrant)
	})
	t.Run("AS-12 family expires", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		rt := h.tokens(nil).RefreshToken
		h.clock.Advance(DefaultRefreshTokenTTL)
		wantError(t, refresh(h, rt, nil), 400, oauthmeta.CodeInvalidGrant)
	})
	t.Run("no refresh token for a client without the grant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, "", nil)
		q, v := authParams(localhostID, localhostCB)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v}, "client_id": {localhostID}, "redirect_uri": {localhostCB}}
		res := h.token(form, "", "")
		if res.status != http.StatusOK || res.tok.RefreshToken != "" {
			t.Fatalf("%d %s", res.status, res.body)
		}
	})
}

// TestClientAuthentication covers requirement AS-10's invalid_client 401
// and the three authentication methods.
func TestClientAuthentication(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	type auth struct{ user, pass, formID, formSecret string }
	tests := []struct {
		name   string
		client string
		auth   auth
		status int
		want   oauthmeta.ErrorCode
	}{
		{"basic ok", basicID, auth{user: basicID, pass: basicSecret}, 200, ""},
		{"post ok", postID, auth{formID: postID, formSecret: postSecret}, 200, ""},
		{"none ok", publicID, auth{formID: publicID}, 200, ""},
		{"AS-10 basic wrong secret", basicID, auth{user: basicID, pass: "wrong"}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 post wrong secret", postID, auth{formID: postID, formSecret: "wrong"}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 confidential client without secret", basicID, auth{formID: basicID}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 basic client using post", basicID, auth{formID: basicID, formSecret: basicSecret}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 post client using basic", postID, auth{user: postID, pass: postSecret}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 public client with a secret", publicID, auth{formID: publicID, formSecret: "x"}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 unknown client", publicID, auth{formID: "nobody"}, 401, oauthmeta.CodeInvalidClient},
		{"AS-10 no client at all", publicID, auth{}, 401, oauthmeta.CodeInvalidClient},
		{"two methods", basicID, auth{user: basicID, pass: basicSecret, formSecret: basicSecret}, 400, oauthmeta.CodeInvalidRequest},
		{"basic and form client_id differ", basicID, auth{user: basicID, pass: basicSecret, formID: postID}, 400, oauthmeta.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, v := authParams(tt.client, publicCB)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {h.code(q, v)}, "code_verifier": {v}, "redirect_uri": {publicCB}}
			if tt.auth.formID != "" {
				form.Set("client_id", tt.auth.formID)
			}
			if tt.auth.formSecret != "" {
				form.Set("client_secret", tt.auth.formSecret)
			}
			res := h.token(form, tt.auth.user, tt.auth.pass)
			if tt.status == 200 {
				if res.status != 200 {
					t.Fatalf("%d %s", res.status, res.body)
				}
				return
			}
			wantError(t, res, tt.status, tt.want)
			if tt.status == 401 && !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Basic ") {
				t.Fatalf("AS-10: 401 without a Basic challenge: %v", res.header)
			}
			if strings.Contains(string(res.body), basicSecret) || strings.Contains(string(res.body), postSecret) {
				t.Fatal("error body echoes a secret")
			}
		})
	}
}

// TestParseClientAuthMethods: each authentication method alone is
// recognised; any two or three in one request are invalid_request,
// whatever order they are looked for in.
func TestParseClientAuthMethods(t *testing.T) {
	t.Parallel()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(basicID+":"+basicSecret))
	assertion := url.Values{"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {"a.b.c"}, "client_id": {basicID}}
	for _, tc := range []struct {
		name   string
		header string
		form   url.Values
		method string // "" for invalid_request
	}{
		{"none", "", url.Values{"client_id": {publicID}}, oauthmeta.AuthMethodNone},
		{"basic", basic, url.Values{}, oauthmeta.AuthMethodClientSecretBasic},
		{"basic in other case", "bASIC" + strings.TrimPrefix(basic, "Basic"), url.Values{}, oauthmeta.AuthMethodClientSecretBasic},
		// U+017F folds to "s" under Unicode rules only: not Basic.
		{"long s in the scheme", "Baſic" + strings.TrimPrefix(basic, "Basic"), url.Values{"client_id": {publicID}}, oauthmeta.AuthMethodNone},
		{"post", "", url.Values{"client_id": {postID}, "client_secret": {postSecret}}, oauthmeta.AuthMethodClientSecretPost},
		{"assertion", "", assertion, oauthmeta.AuthMethodPrivateKeyJWT},
		{"basic and post", basic, url.Values{"client_secret": {basicSecret}}, ""},
		{"basic and assertion", basic, assertion, ""},
		{"basic and assertion type only", basic, url.Values{"client_assertion_type": {jwtassert.ClientAssertionType}}, ""},
		{"post and assertion", "", url.Values{"client_secret": {"s"}, "client_assertion": {"a.b.c"}, "client_id": {basicID}}, ""},
		{"all three", basic, url.Values{"client_secret": {"s"}, "client_assertion": {"a.b.c"}}, ""},
	} {
		for range 10 {
			r := httptest.NewRequest(http.MethodPost, "/token", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			p, oe := parseClientAuth(r, tc.form)
			switch {
			case tc.method == "" && (oe == nil || oe.Code != oauthmeta.CodeInvalidRequest):
				t.Fatalf("%s: %+v, %v; want invalid_request", tc.name, p, oe)
			case tc.method != "" && (oe != nil || p.method != tc.method):
				t.Fatalf("%s: %+v, %v; want %s", tc.name, p, oe, tc.method)
			}
		}
	}
}

// TestTokenRequestErrors covers requirement AS-10: OAuth JSON errors with
// the right codes for malformed requests.
func TestTokenRequestErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.MaxBodyBytes = 2048 })
	tests := []struct {
		name string
		form url.Values
		want oauthmeta.ErrorCode
	}{
		{"AS-01 password grant", url.Values{"grant_type": {"password"}, "client_id": {publicID}, "username": {"u"}, "password": {"p"}}, oauthmeta.CodeUnsupportedGrantType},
		{"client_credentials for a public client", url.Values{"grant_type": {"client_credentials"}, "client_id": {publicID}}, oauthmeta.CodeUnauthorizedClient},
		{"jwt-bearer without trusted issuers", url.Values{"grant_type": {oauthmeta.GrantTypeJWTBearer}, "assertion": {"a.b.c"}}, oauthmeta.CodeUnsupportedGrantType},
		{"missing grant_type", url.Values{"client_id": {publicID}}, oauthmeta.CodeInvalidRequest},
		{"repeated code", url.Values{"grant_type": {"authorization_code"}, "client_id": {publicID}, "code": {"a", "b"}}, oauthmeta.CodeInvalidRequest},
		{"body too large", url.Values{"grant_type": {"authorization_code"}, "client_id": {publicID}, "pad": {strings.Repeat("x", 4096)}}, oauthmeta.CodeInvalidRequest},
		{"refresh without token", url.Values{"grant_type": {"refresh_token"}, "client_id": {publicID}}, oauthmeta.CodeInvalidRequest},
		{"unknown refresh token", url.Values{"grant_type": {"refresh_token"}, "client_id": {publicID}, "refresh_token": {"nope"}}, oauthmeta.CodeInvalidGrant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, h.token(tt.form, "", ""), 400, tt.want)
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodPost, h.url(pathToken), strings.NewReader(`{"grant_type":"authorization_code"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("GET is refused", func(t *testing.T) {
		t.Parallel()
		if resp := h.get(h.url(pathToken)); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("malformed basic", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest(http.MethodPost, h.url(pathToken), strings.NewReader("grant_type=authorization_code"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("no-colon")))
		resp, err := h.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

// TestAccessTokenLifetime: AS-12 asks for short-lived access tokens; an
// expired one is inactive for introspection.
func TestAccessTokenLifetime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.AccessTokenTTL = 2 * time.Minute })
	tok := h.tokens(nil)
	if tok.ExpiresIn != 120 {
		t.Fatalf("expires_in = %d", tok.ExpiresIn)
	}
	h.clock.Advance(2 * time.Minute)
	if m, body := h.introspect(tok.AccessToken); m["active"] != false || len(m) != 1 {
		t.Fatalf("AS-18: expired token: %s", body)
	}
}
