package resource_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

func testPolicy() *resource.Policy {
	return &resource.Policy{
		Default: []string{"mcp:tools"},
		Tools:   map[string][]string{"write_file": {"files:write"}},
		Implies: map[string][]string{"admin": {"files:write", "mcp:tools"}},
	}
}

type unavailableKeys struct{}

func (unavailableKeys) Keys(context.Context, string) ([]keyset.Key, error) {
	return nil, resource.ErrKeysUnavailable
}

// TestChallenges covers RS-04…RS-07, RS-12, RS-16, RS-17, RS-25 and RS-26:
// the status, the challenge and the body of every refusal, and that the
// token never appears in a response.
func TestChallenges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Policy = testPolicy() })
	valid := f.token(nil)
	expired := f.token(func(c *oauthtest.AccessToken) { c.Expiry = f.clock.Now().Add(-time.Hour) })
	readOnly := f.token(func(c *oauthtest.AccessToken) { c.Scope = "files:read" })
	tests := []struct {
		name      string
		req       func() *http.Request
		status    int
		errCode   string // "" means the challenge has no error attribute
		desc      string
		scope     string
		challenge bool
	}{
		{"RS-04 RS-05 RS-06 no credentials", func() *http.Request { return mcpPost("", "") },
			401, "", "", "mcp:tools", true},
		{"RS-07 expired token", func() *http.Request { return mcpPost(expired, "") },
			401, "invalid_token", "token expired", "mcp:tools", true},
		{"RS-10 64 KiB token refused before parsing", func() *http.Request { return mcpPost(strings.Repeat("a", 64<<10), "") },
			401, "invalid_token", "token is too large", "mcp:tools", true},
		{"RS-07 garbage token", func() *http.Request { return mcpPost("garbage", "") },
			401, "invalid_token", "token format not supported", "mcp:tools", true},
		{"RS-16 two Authorization headers", func() *http.Request {
			r := mcpPost(valid, "")
			r.Header.Add("Authorization", "Bearer "+valid)
			return r
		}, 400, "invalid_request", "more than one credential in the request", "mcp:tools", true},
		{"RS-16 Bearer a b", func() *http.Request {
			r := mcpPost("", "")
			r.Header.Set("Authorization", "Bearer a b")
			return r
		}, 400, "invalid_request", "malformed Authorization header", "mcp:tools", true},
		{"RS-16 Bearer without token", func() *http.Request {
			r := mcpPost("", "")
			r.Header.Set("Authorization", "Bearer")
			return r
		}, 400, "invalid_request", "malformed Authorization header", "mcp:tools", true},
		{"RS-16 token in query and header", func() *http.Request {
			r := mcpPost(valid, "")
			r.URL.RawQuery = "access_token=" + url.QueryEscape(valid)
			return r
		}, 400, "invalid_request", "more than one credential in the request", "mcp:tools", true},
		{"RS-17 valid token in the query only", func() *http.Request {
			r := mcpPost("", "")
			r.URL.RawQuery = "access_token=" + url.QueryEscape(valid)
			return r
		}, 400, "invalid_request", "access token in the query string", "mcp:tools", true},
		{"RS-16 token in a form body", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader("access_token="+valid))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, 400, "invalid_request", "form-encoded request body", "mcp:tools", true},
		{"other scheme counts as no credentials", func() *http.Request {
			r := mcpPost("", "")
			r.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
			return r
		}, 401, "", "", "mcp:tools", true},
		{"RS-12 insufficient scope", func() *http.Request { return mcpPost(readOnly, toolCall("write_file")) },
			403, "insufficient_scope", "the operation needs more scopes", "mcp:tools files:write", true},
		{"lowercase bearer scheme accepted", func() *http.Request {
			r := mcpPost("", "")
			r.Header.Set("Authorization", "bearer "+valid)
			return r
		}, 200, "", "", "", false},
		{"upper-case scheme and extra spaces accepted", func() *http.Request {
			r := mcpPost("", "")
			r.Header.Set("Authorization", "BEARER   "+valid)
			return r
		}, 200, "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, s := f.serve(tt.req())
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d (body %s)", rec.Code, tt.status, rec.Body)
			}
			for _, tok := range []string{valid, expired, readOnly} {
				if strings.Contains(rec.Body.String(), tok) || strings.Contains(fmt.Sprint(rec.Header()), tok) {
					t.Fatal("RS-24: response echoes the token")
				}
			}
			if !tt.challenge {
				if got := rec.Header().Values("WWW-Authenticate"); got != nil {
					t.Errorf("unexpected challenge %q", got)
				}
				if s.count() != 1 {
					t.Errorf("handler called %d times", s.count())
				}
				return
			}
			if s.count() != 0 {
				t.Fatal("the wrapped handler ran for a refused request")
			}
			c := bearerChallenge(t, rec)
			if got := c.Value("error"); got != tt.errCode {
				t.Errorf("error = %q, want %q", got, tt.errCode)
			}
			if got := c.Value("error_description"); got != tt.desc {
				t.Errorf("error_description = %q, want %q", got, tt.desc)
			}
			if got := c.Value("scope"); got != tt.scope {
				t.Errorf("scope = %q, want %q", got, tt.scope)
			}
			if got := c.Value("resource_metadata"); got != testPRM {
				t.Errorf("RS-25: resource_metadata = %q", got)
			}
			if got := rec.Header().Get("Access-Control-Expose-Headers"); !strings.Contains(got, "WWW-Authenticate") {
				t.Errorf("RS-26: Access-Control-Expose-Headers = %q", got)
			}
		})
	}
}

// TestChallengeGolden pins the exact challenge texts.
func TestChallengeGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Policy = testPolicy() })
	rec, _ := f.serve(mcpPost("", ""))
	golden.Text(t, "challenge_401.txt", rec.Header().Get("WWW-Authenticate"))
	rec, _ = f.serve(mcpPost(f.token(func(c *oauthtest.AccessToken) { c.Expiry = f.clock.Now().Add(-time.Hour) }), ""))
	golden.Text(t, "challenge_401_invalid_token.txt", rec.Header().Get("WWW-Authenticate"))
	golden.JSON(t, "error_invalid_token.json", jsonValue(t, rec.Body.Bytes()))
	rec, _ = f.serve(mcpPost(f.token(func(c *oauthtest.AccessToken) { c.Scope = "files:read" }), toolCall("write_file")))
	golden.Text(t, "challenge_403.txt", rec.Header().Get("WWW-Authenticate"))
}

// TestUnavailable: a key source that cannot answer gives 503 with no
// challenge and no detail, and the handler does not run.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f2 := newFixture(t, func(c *resource.Config) {
		c.Issuers = []resource.Issuer{{Issuer: testIssuer, Keys: unavailableKeys{}}}
	})
	rec, s := f2.serve(mcpPost(f.token(nil), ""))
	if rec.Code != http.StatusServiceUnavailable || s.count() != 0 {
		t.Fatalf("status %d, handler calls %d", rec.Code, s.count())
	}
	if rec.Header().Get("WWW-Authenticate") != "" {
		t.Error("503 carries a challenge")
	}
	if got := strings.TrimSpace(rec.Body.String()); got != `{"error":"temporarily_unavailable"}` {
		t.Errorf("body %s has detail", got)
	}
}

// TestStripAuthorization covers RS-19: the handler sees no Authorization
// header but the validated identity.
func TestStripAuthorization(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	req := mcpPost(f.token(nil), "")
	rec, s := f.serve(req)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	if len(s.authorization) != 0 {
		t.Errorf("RS-19: handler saw Authorization %q", s.authorization)
	}
	if s.info == nil || s.info.Subject != "user-1" || s.info.ClientID != "client-1" {
		t.Errorf("TokenInfo = %+v", s.info)
	}
}

// TestInboundRequestUnchanged: the middleware hands the wrapped handler a
// copy and leaves the *http.Request it was given as it was (net/http's
// Handler contract), headers and body field included, with and without a
// policy that reads the body; the handler's Set, Add and Del on its copy's
// header do not reach the original either.
func TestInboundRequestUnchanged(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy *resource.Policy
		body   string
	}{
		{"default policy, body not read", nil, ""},
		{"per-tool policy, body read and replayed", testPolicy(), toolCall("read_file")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *resource.Config) { c.Policy = tt.policy })
			req := mcpPost(f.token(nil), tt.body)
			req.Header.Set("Mcp-Method", "tools/call")
			if tt.body == "" {
				req.Header.Del("Mcp-Method")
			}
			wantHeader := req.Header.Clone()
			wantBody, wantCtx := req.Body, req.Context()
			var got *http.Request
			var gotBody []byte
			h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				gotBody, _ = io.ReadAll(r.Body)
				r.Header.Set("Accept", "changed")
				r.Header.Add("Content-Type", "added")
				r.Header.Del("Mcp-Method")
				r.Header.Set("X-Added", "1")
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || got == nil {
				t.Fatalf("status %d, handler called: %v", rec.Code, got != nil)
			}
			if got == req {
				t.Error("the handler received the inbound *http.Request itself")
			}
			if !reflect.DeepEqual(req.Header, wantHeader) {
				t.Errorf("inbound header changed:\n got %v\nwant %v", req.Header, wantHeader)
			}
			if req.Body != wantBody || req.Context() != wantCtx {
				t.Error("inbound body or context replaced")
			}
			want := tt.body
			if want == "" {
				want = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
			}
			if string(gotBody) != want {
				t.Errorf("handler read body %q, want %q", gotBody, want)
			}
		})
	}
}

// TestHandlerCannotAlterCache: the identity a handler receives is its
// request's own. A handler that appends to and edits its Scopes, Audience
// and Claims (and a caller of Verify that does the same) changes nothing
// for the next request with the same token, which the cached verification
// still judges: the step-up scope it added is still missing.
func TestHandlerCannotAlterCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Policy = testPolicy() })
	tok := f.token(nil)
	type view struct {
		scopes   string
		aud, sub string
		claims0  byte
		// go-sdk's auth.TokenInfo of the request
		sdkScopes, userID, extraSub string
		extraAud                    any
	}
	var infos []*resource.TokenInfo
	var views []view
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := resource.TokenInfoFromContext(r.Context())
		if info != resource.TokenInfoFromContext(r.Context()) {
			t.Error("two calls for one request returned different values")
		}
		infos = append(infos, info)
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil || ti != auth.TokenInfoFromContext(r.Context()) || resource.TokenInfoFromSDK(ti) != info {
			t.Fatal("go-sdk's TokenInfo missing, or not the request's")
		}
		views = append(views, view{strings.Join(info.Scopes, " "), info.Audience[0], info.Subject, info.Claims[0],
			strings.Join(ti.Scopes, " "), ti.UserID, ti.Extra["sub"].(string), ti.Extra["aud"]})
		ti.Scopes[0], ti.UserID, ti.Extra["sub"] = "admin", "someone-else", "someone-else"
		ti.Scopes = append(ti.Scopes, "files:write")
		info.Scopes[0] = "admin"
		info.Scopes = append(info.Scopes, "files:write")
		info.Audience[0] = "https://other.example.com"
		info.Claims[0] = 'X'
		info.Subject = "someone-else"
	}))
	mutated, err := f.v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	mutated.Scopes[0], mutated.Audience[0], mutated.Claims[0] = "admin", "x", 'X'
	for i := range 2 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, mcpPost(tok, toolCall("read_file")))
		if rec.Code != 200 {
			t.Fatalf("request %d: status %d", i, rec.Code)
		}
	}
	if len(infos) != 2 || infos[0] == infos[1] {
		t.Fatalf("requests shared a TokenInfo (%d values)", len(infos))
	}
	want := []string{"mcp:tools", "files:read"}
	for i, got := range views {
		if got != (view{"mcp:tools files:read", testResource, "user-1", '{', "mcp:tools files:read", testIssuer + "#user-1", "user-1", testResource}) {
			t.Errorf("request %d saw %+v", i, got)
		}
	}
	fresh, err := f.v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.Scopes, want) || fresh.Audience[0] != testResource || fresh.Subject != "user-1" || fresh.Claims[0] != '{' {
		t.Errorf("cached identity altered: %+v", fresh)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mcpPost(tok, toolCall("write_file")))
	if rec.Code != http.StatusForbidden {
		t.Errorf("write_file after a handler added files:write: status %d, want 403", rec.Code)
	}
}

// TestPerRequestAuthentication covers RS-20 and TR-09: every request on one
// connection is authenticated on its own, and a session id is no
// credential.
func TestPerRequestAuthentication(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := &seen{}
	srv := httptest.NewServer(f.v.Middleware(s.handler()))
	t.Cleanup(srv.Close)
	client := srv.Client()
	send := func(token string, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(f.token(nil), nil); got != 200 {
		t.Fatalf("first request: %d", got)
	}
	if got := send("", nil); got != 401 {
		t.Errorf("RS-20: second request without a token on the same connection: %d, want 401", got)
	}
	if got := send("", map[string]string{"Mcp-Session-Id": "session-from-before"}); got != 401 {
		t.Errorf("RS-20: Mcp-Session-Id without a token: %d, want 401", got)
	}
	other := f.token(func(c *oauthtest.AccessToken) { c.Subject = "user-2" })
	if got := send(other, nil); got != 200 || s.info.Subject != "user-2" {
		t.Errorf("TR-09: a different token on the same connection: %d, subject %q", got, s.info.Subject)
	}
	if s.count() != 2 {
		t.Errorf("handler calls = %d, want 2", s.count())
	}
}

// TestOptionsAndCORS covers RS-26 and TR-01.
func TestOptionsAndCORS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.AllowedOrigins = []string{"https://app.example.org"} })
	valid := f.token(nil)
	tests := []struct {
		name        string
		method      string
		origin      string
		token       string
		status      int
		allowOrigin string
		handler     bool
	}{
		{"RS-26 preflight is never challenged", http.MethodOptions, "https://app.example.org", "", 204, "https://app.example.org", false},
		{"RS-26 OPTIONS without Origin", http.MethodOptions, "", "", 204, "", false},
		{"TR-01 preflight from a foreign origin", http.MethodOptions, "https://evil.example", "", 403, "", false},
		{"TR-01 foreign origin with a valid token", http.MethodPost, "https://evil.example", valid, 403, "", false},
		{"TR-01 no Origin is allowed", http.MethodPost, "", valid, 200, "", true},
		{"TR-01 the resource's own origin", http.MethodPost, "https://mcp.example.com", valid, 200, "https://mcp.example.com", true},
		{"TR-01 a configured origin", http.MethodPost, "https://app.example.org", valid, 200, "https://app.example.org", true},
		{"TR-01 origin null", http.MethodPost, "null", valid, 403, "", false},
		{"RS-26 allowed origin without token gets an exposed challenge", http.MethodPost, "https://app.example.org", "", 401, "https://app.example.org", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := mcpPost(tt.token, "")
			req.Method = tt.method
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.method == http.MethodOptions {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-method, mcp-param-tenant")
			}
			rec, s := f.serve(req)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d", rec.Code, tt.status)
			}
			if (s.count() == 1) != tt.handler {
				t.Errorf("handler ran: %v", s.count() == 1)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, tt.allowOrigin)
			}
			if tt.status == 403 {
				if c := bearerChallenge(t, rec); c.Value("resource_metadata") != testPRM || c.Value("error") != "" {
					t.Errorf("RS-25: TR-01 403 challenge = %+v", c)
				}
				if code := rpcErrorCode(t, rec.Body.Bytes()); code != -32600 {
					t.Errorf("JSON-RPC code %d", code)
				}
			}
			if tt.method == http.MethodOptions && tt.status == 204 {
				if rec.Header().Get("WWW-Authenticate") != "" {
					t.Error("RS-26: OPTIONS challenged")
				}
				if tt.origin != "" && !strings.Contains(rec.Header().Get("Access-Control-Allow-Headers"), "mcp-param-tenant") {
					t.Errorf("Access-Control-Allow-Headers = %q", rec.Header().Get("Access-Control-Allow-Headers"))
				}
			}
			if tt.status == 401 && !strings.Contains(rec.Header().Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
				t.Error("RS-26: WWW-Authenticate not exposed")
			}
		})
	}
}

// TestCheckOrder covers TR-11: Origin (403), then authentication (401),
// then header checks (400), then scope (403).
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Policy = testPolicy() })
	readOnly := f.token(func(c *oauthtest.AccessToken) { c.Scope = "files:read" })
	tests := []struct {
		name   string
		origin string
		token  string
		header string // Mcp-Name
		status int
	}{
		{"TR-11 bad origin beats missing token", "https://evil.example", "", "write_file", 403},
		{"TR-11 missing token beats header mismatch", "", "", "read_file", 401},
		{"TR-11 header mismatch beats missing scope", "", readOnly, "read_file", 400},
		{"TR-11 scope last", "", readOnly, "write_file", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := mcpPost(tt.token, toolCall("write_file"))
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", tt.header)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			rec, s := f.serve(req)
			if rec.Code != tt.status || s.count() != 0 {
				t.Errorf("status %d (want %d), handler calls %d", rec.Code, tt.status, s.count())
			}
		})
	}
}
