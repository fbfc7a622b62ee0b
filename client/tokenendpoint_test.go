package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// rawTokenEndpoint is a token endpoint on 127.0.0.1 that gives whatever
// answer it is told to; a redirect points back at itself.
type rawTokenEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	ct       string
	body     []byte
	requests int
	required bool // the proof's key is for a resource that requires DPoP
}

func newRawTokenEndpoint(t testing.TB) *rawTokenEndpoint {
	e := &rawTokenEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.requests++
		if e.status/100 == 3 {
			w.Header().Set("Location", "/token")
		}
		w.Header().Set("Content-Type", e.ct)
		w.WriteHeader(e.status)
		_, _ = w.Write(e.body)
	}))
	t.Cleanup(e.Close)
	return e
}

// answer runs a token request (with a DPoP proof if withProof) that the
// endpoint answers with status, ct and body, through the whole token path.
// The request carries the credential "SENT-SECRET".
func (e *rawTokenEndpoint) answer(c *Client, withProof bool, status int, ct string, body []byte) (*tokenstore.Token, error) {
	e.mu.Lock()
	e.status, e.ct, e.body = status, ct, body
	e.mu.Unlock()
	var d *dpopKey
	if withProof {
		var err error
		if d, err = c.dpop.keyFor(nil, nil); err != nil {
			return nil, err
		}
		d.required = e.required
	}
	params := url.Values{"grant_type": {"client_credentials"}}
	auth := &clientAuth{method: oauthmeta.AuthMethodClientSecretBasic, clientID: "x", secret: "SENT-SECRET"}
	tok, err := c.postToken(context.Background(), e.URL+"/token", params, auth, "", d)
	if err != nil {
		return nil, err
	}
	return c.newToken(tok, d, []string{"x"}, nil)
}

// TestTokenResponseRules checks the token response rules on raw answers.
func TestTokenResponseRules(t *testing.T) {
	t.Parallel()
	const jsonCT = "application/json"
	tests := []struct {
		name     string
		status   int
		ct       string
		body     string
		wantErrs []error
		wantCode oauthmeta.ErrorCode
	}{
		{"valid", 200, jsonCT, `{"access_token":"a","token_type":"Bearer","expires_in":60}`, nil, ""},
		{"token_type compared case-insensitively", 200, "application/json; charset=utf-8", `{"access_token":"a","token_type":"bearer"}`, nil, ""},
		{"bad input: no token_type", 200, jsonCT, `{"access_token":"a"}`, []error{errTokenResponse, oauthmeta.ErrMissingField}, ""},
		{"bad input: token_type DPoP (until DPoP)", 200, jsonCT, `{"access_token":"a","token_type":"DPoP"}`, []error{errTokenResponse, errTokenType}, ""},
		{"bad input: token_type mac", 200, jsonCT, `{"access_token":"a","token_type":"mac"}`, []error{errTokenType}, ""},
		{"no access_token", 200, jsonCT, `{"token_type":"Bearer"}`, []error{errTokenResponse}, ""},
		{"duplicate member", 200, jsonCT, `{"access_token":"a","access_token":"b","token_type":"Bearer"}`, []error{errTokenResponse, oauthmeta.ErrMalformed}, ""},
		{"case-variant member name", 200, jsonCT, `{"Access_Token":"a","token_type":"Bearer"}`, []error{errTokenResponse}, ""},
		{"case-variant beside the member", 200, jsonCT, `{"access_token":"a","ACCESS_TOKEN":"b","token_type":"Bearer"}`, []error{errTokenResponse}, ""},
		{"case-variant token_type", 200, jsonCT, `{"access_token":"a","token_type":"Bearer","Token_Type":"mac"}`, []error{errTokenResponse}, ""},
		{"array", 200, jsonCT, `[]`, []error{errTokenResponse}, ""},
		{"form-encoded", 200, "application/x-www-form-urlencoded", `access_token=a&token_type=bearer`, []error{errTokenResponse}, ""},
		{"negative expires_in", 200, jsonCT, `{"access_token":"a","token_type":"Bearer","expires_in":-1}`, []error{errTokenResponse}, ""},
		{"error response", 400, jsonCT, `{"error":"invalid_grant","error_description":"expired"}`, []error{errTokenResponse}, oauthmeta.CodeInvalidGrant},
		{"error response echoing the secret", 401, jsonCT, `{"error":"invalid_client","error_description":"SENT-SECRET is wrong"}`, []error{errTokenResponse}, oauthmeta.CodeInvalidClient},
		{"error response that is not JSON", 500, "text/html", `<h1>SENT-SECRET</h1>`, []error{errTokenResponse}, ""},
		{"redirect (not followed)", 307, jsonCT, `{"access_token":"a","token_type":"Bearer"}`, []error{errTokenResponse}, ""},
	}
	e := newRawTokenEndpoint(t)
	c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.mu.Lock()
			before := e.requests
			e.mu.Unlock()
			tok, err := e.answer(c, false, tt.status, tt.ct, []byte(tt.body))
			e.mu.Lock()
			if n := e.requests - before; n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			e.mu.Unlock()
			if len(tt.wantErrs) == 0 && tt.wantCode == "" && (err != nil || tok.AccessToken != "a") {
				t.Fatalf("token %v, err = %v", tok, err)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want %v", err, want)
				}
			}
			if tt.wantCode != "" && !errors.Is(err, &oauthmeta.Error{Code: tt.wantCode}) {
				t.Errorf("err = %v, want code %s", err, tt.wantCode)
			}
			if err != nil && strings.Contains(err.Error(), "SENT-SECRET") {
				t.Errorf("the credential is in the error: %v", err)
			}
		})
	}
}

// TestTokenResponseBadInput runs the bad token responses end to end: the
// code exchange fails, nothing is stored, nothing leaks.
func TestTokenResponseBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		as      oauthtest.ASOptions
		wantErr error
	}{
		{"bad input: token response without token_type", oauthtest.ASOptions{TokenType: "-"}, errTokenResponse},
		{"bad input: token_type other than Bearer", oauthtest.ASOptions{TokenType: "DPoP"}, errTokenType},
		{"bad input: token response over 1 MiB", oauthtest.ASOptions{PadTokenResponse: 1 << 20}, errResponseTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.as, oauthtest.ResourceOptions{}, nil)
			ctx := context.Background()
			err := e.c.Login(ctx, e.rs.MCPURL())
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, errTokenResponse) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tok, _ := e.c.currentToken(ctx, e.rs.MCPURL()); tok != nil {
				t.Error("a token was stored")
			}
			e.noLeak(err)
		})
	}
}

// TestTokenEndpointAuthMethods: none, client_secret_basic and
// client_secret_post, chosen from the registration and the metadata.
func TestTokenEndpointAuthMethods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		as         oauthtest.ASOptions
		pre        *PreRegisteredClient
		wantMethod string
	}{
		{"none", oauthtest.ASOptions{AuthMethods: []string{"none"}}, nil, "none"},
		{"client_secret_basic", oauthtest.ASOptions{AuthMethods: []string{"client_secret_basic"}}, nil, "client_secret_basic"},
		{"client_secret_post", oauthtest.ASOptions{AuthMethods: []string{"client_secret_post"}}, nil, "client_secret_post"},
		{"pre-registered, method from metadata", oauthtest.ASOptions{NoRegistration: true, AuthMethods: []string{"client_secret_post"},
			PreRegistered: []oauthtest.RegisteredClient{{ID: "p", Secret: "s:&=é", Method: "client_secret_post"}}},
			&PreRegisteredClient{ClientID: "p", ClientSecret: "s:&=é"}, "client_secret_post"},
		{"pre-registered basic with characters to escape", oauthtest.ASOptions{NoRegistration: true, AuthMethods: []string{"client_secret_basic"},
			PreRegistered: []oauthtest.RegisteredClient{{ID: "p:1", Secret: "s:&=é+", Method: "client_secret_basic"}}},
			&PreRegisteredClient{ClientID: "p:1", ClientSecret: "s:&=é+"}, "client_secret_basic"},
		{"pre-registered public client", oauthtest.ASOptions{NoRegistration: true, AuthMethods: []string{"none", "client_secret_basic"},
			PreRegistered: []oauthtest.RegisteredClient{{ID: "pub", Method: "none"}}}, &PreRegisteredClient{ClientID: "pub"}, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAS(t, tt.as)
			rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
			cfg := Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true}
			if tt.pre != nil {
				p := *tt.pre
				p.Issuer = as.Issuer()
				cfg.PreRegistered = []PreRegisteredClient{p}
			}
			c, _ := New(cfg)
			if err := c.Login(context.Background(), rs.MCPURL()); err != nil {
				t.Fatal(err)
			}
			tr := as.TokenRequests()[0]
			got := "none"
			switch {
			case strings.HasPrefix(tr.Header.Get("Authorization"), "Basic "):
				got = "client_secret_basic"
			case tr.Form.Has("client_secret"):
				got = "client_secret_post"
			}
			if got != tt.wantMethod {
				t.Errorf("method = %s, want %s", got, tt.wantMethod)
			}
		})
	}
}

func TestTokenAuthMethod(t *testing.T) {
	t.Parallel()
	md := func(methods ...string) *oauthmeta.AuthServerMetadata {
		return &oauthmeta.AuthServerMetadata{TokenEndpointAuthMethodsSupported: methods}
	}
	tests := []struct {
		name string
		reg  tokenstore.Registration
		md   *oauthmeta.AuthServerMetadata
		want string
	}{
		{"CL-25 CIMD never sends a secret", tokenstore.Registration{Method: tokenstore.MethodCIMD, ClientSecret: "x", TokenEndpointAuthMethod: "client_secret_basic"}, md("client_secret_basic"), "none"},
		{"no secret is public", tokenstore.Registration{TokenEndpointAuthMethod: "client_secret_basic"}, md("client_secret_basic"), "none"},
		{"registered method wins", tokenstore.Registration{ClientSecret: "s", TokenEndpointAuthMethod: "client_secret_post"}, md("client_secret_basic"), "client_secret_post"},
		{"basic preferred", tokenstore.Registration{ClientSecret: "s"}, md("client_secret_post", "client_secret_basic"), "client_secret_basic"},
		{"post when only post", tokenstore.Registration{ClientSecret: "s"}, md("client_secret_post"), "client_secret_post"},
		{"RFC 8414 default is basic", tokenstore.Registration{ClientSecret: "s"}, md(), "client_secret_basic"},
		{"secret issued but only none supported", tokenstore.Registration{ClientSecret: "s"}, md("none"), "none"},
		{"unknown registered method", tokenstore.Registration{ClientSecret: "s", TokenEndpointAuthMethod: "tls_client_auth"}, md("client_secret_post"), "client_secret_post"},
	}
	for _, tt := range tests {
		if got := tokenAuthMethod(&tt.reg, tt.md); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestCL04RefreshResource: refresh sends resource, unless the per-issuer
// switch omits it; a rotated refresh token is persisted (CL-20).
func TestCL04RefreshResource(t *testing.T) {
	t.Parallel()
	for _, omit := range []bool{false, true} {
		t.Run(map[bool]string{false: "CL-04 resource on refresh", true: "OmitResourceOnRefresh"}[omit], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true, RotateRefreshTokens: true, ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
			// The issuer is known once the server runs; set before first use.
			e.c.cfg.AuthServers = map[string]AuthServerOptions{e.as.Issuer(): {OmitResourceOnRefresh: omit}}
			ctx := context.Background()
			if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
				t.Fatal(err)
			}
			var rts []string
			for range 2 {
				e.clock.Advance(2 * time.Minute)
				tok, err := e.c.currentToken(ctx, e.rs.MCPURL())
				if err != nil || tok == nil {
					t.Fatalf("refresh: %v", err)
				}
				rts = append(rts, tok.RefreshToken)
			}
			trs := e.as.TokenRequests()
			if len(trs) != 3 {
				t.Fatalf("token requests = %d, want 3", len(trs))
			}
			for _, tr := range trs[1:] {
				if tr.Form.Get("grant_type") != "refresh_token" {
					t.Fatalf("grant_type = %q", tr.Form.Get("grant_type"))
				}
				if has := tr.Form.Has("resource"); has == omit || (has && tr.Form.Get("resource") != e.rs.MCPURL()) {
					t.Errorf("refresh resource = %q (present %v), omit = %v", tr.Form.Get("resource"), has, omit)
				}
			}
			if rts[0] == rts[1] || trs[2].Form.Get("refresh_token") != rts[0] {
				t.Error("CL-20: the rotated refresh token was not persisted and used")
			}
			st, _ := e.c.tokenState(ctx, e.rs.MCPURL())
			if st.tok.RefreshToken != rts[1] {
				t.Error("CL-20: the store does not hold the newest refresh token")
			}
		})
	}
}

// TestRefreshDeduplicated: concurrent requests for an expired token cause
// one refresh, within a process and across processes sharing a file
// store.
func TestRefreshDeduplicated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true, RotateRefreshTokens: true, ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		runConcurrently(t, 16, func() error {
			tok, err := e.c.currentToken(ctx, e.rs.MCPURL())
			if err == nil && tok == nil {
				err = errors.New("no token")
			}
			return err
		})
		if n := len(e.as.TokenRequests()); n != 2 {
			t.Errorf("token requests = %d, want 1 exchange + 1 refresh", n)
		}
	})
	t.Run("processes sharing a file store", func(t *testing.T) {
		t.Parallel()
		as := oauthtest.NewAS(t, oauthtest.ASOptions{IssueRefreshTokens: true, RotateRefreshTokens: true, ExpiresIn: 60})
		rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
		path := filepath.Join(t.TempDir(), "tokens.json")
		now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		var clients []*Client
		for range 4 {
			store, _ := tokenstore.NewFile(path)
			c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Store: store, Now: clock})
			clients = append(clients, c)
		}
		if err := clients[0].Login(ctx, rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		now = now.Add(time.Hour)
		mu.Unlock()
		var i int
		var imu sync.Mutex
		runConcurrently(t, 4, func() error {
			imu.Lock()
			c := clients[i]
			i++
			imu.Unlock()
			tok, err := c.currentToken(ctx, rs.MCPURL())
			if err == nil && tok == nil {
				err = errors.New("no token")
			}
			return err
		})
		if n := len(as.TokenRequests()); n != 2 {
			t.Errorf("token requests = %d, want 1 exchange + 1 refresh (a rotated token redeemed twice would fail)", n)
		}
	})
}

func runConcurrently(t *testing.T, n int, fn func() error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- fn()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestRefreshOn401: a refused token is refreshed before any new
// authorization; a refreshed token that is refused too, a refused refresh
// and a challenge for wider scopes lead to a new authorization.
func TestRefreshOn401(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	asOpts := oauthtest.ASOptions{IssueRefreshTokens: true}
	refresh := func(e *env) int {
		n := 0
		for _, tr := range e.as.TokenRequests() {
			if tr.Form.Get("grant_type") == "refresh_token" {
				n++
			}
		}
		return n
	}
	t.Run("refresh before login", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, asOpts, oauthtest.ResourceOptions{}, nil)
		cs, err := e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		e.as.RevokeAccessTokens()
		if err := callTool(ctx, cs, "echo"); err != nil {
			t.Fatal(err)
		}
		if refresh(e) != 1 || len(e.as.Authorizations()) != 1 {
			t.Errorf("refreshes %d, authorizations %d; want 1 and 1", refresh(e), len(e.as.Authorizations()))
		}
	})
	t.Run("refreshed token refused too", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, asOpts, oauthtest.ResourceOptions{}, nil)
		if err := e.login(ctx); err != nil {
			t.Fatal(err)
		}
		resource := e.rs.MCPURL()
		st, _ := e.c.tokenState(ctx, resource)
		if err := e.c.respond(ctx, resource, 401, http.Header{}, st.tok.AccessToken, &attempts{}); err != nil {
			t.Fatal(err)
		}
		st2, _ := e.c.tokenState(ctx, resource)
		if !st2.tok.RefreshedAfterRejection {
			t.Fatal("refreshed token not marked")
		}
		if err := e.c.respond(ctx, resource, 401, http.Header{}, st2.tok.AccessToken, &attempts{}); err != nil {
			t.Fatal(err)
		}
		if refresh(e) != 1 || len(e.as.Authorizations()) != 2 {
			t.Errorf("refreshes %d, authorizations %d; want 1 and 2", refresh(e), len(e.as.Authorizations()))
		}
	})
	t.Run("401 asking for wider scopes skips refresh", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, asOpts, oauthtest.ResourceOptions{ChallengeScope: []string{"read"}}, nil)
		if err := e.login(ctx); err != nil {
			t.Fatal(err)
		}
		resource := e.rs.MCPURL()
		st, _ := e.c.tokenState(ctx, resource)
		h := http.Header{"Www-Authenticate": {`Bearer error="invalid_token", scope="read admin"`}}
		if err := e.c.respond(ctx, resource, 401, h, st.tok.AccessToken, &attempts{}); err != nil {
			t.Fatal(err)
		}
		if refresh(e) != 0 {
			t.Error("refreshed although the challenge needs wider scopes")
		}
		if got := e.as.Authorizations()[1].Get("scope"); got != "read admin" {
			t.Errorf("scope = %q", got)
		}
	})
	t.Run("invalid_grant deletes the token", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true, RotateRefreshTokens: true, ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		st, _ := e.c.tokenState(ctx, e.rs.MCPURL())
		st.tok.RefreshToken = "rt-unknown"
		_ = e.store.PutToken(ctx, st.key, st.tok)
		e.clock.Advance(time.Hour)
		tok, err := e.c.currentToken(ctx, e.rs.MCPURL())
		if err != nil || tok != nil {
			t.Fatalf("currentToken = %v, %v; want none", tok, err)
		}
		if _, err := e.store.Token(ctx, st.key); !errors.Is(err, tokenstore.ErrNotFound) {
			t.Error("a refused refresh token was kept")
		}
		e.noLeak()
	})
}

// TestNewTokenScopes: granted scopes come from the response, else the
// request; on refresh, else the previous grant.
func TestNewTokenScopes(t *testing.T) {
	t.Parallel()
	c, _ := New(Config{Authorizer: &FollowRedirects{}, Now: func() time.Time { return time.Unix(1000, 0) }})
	response := func(extra map[string]any) *oauth2.Token {
		extra["access_token"], extra["token_type"] = "a", "Bearer"
		return (&oauth2.Token{AccessToken: "a", TokenType: "Bearer"}).WithExtra(extra)
	}
	tok, _ := c.newToken(response(map[string]any{"scope": "x y", "expires_in": float64(1 << 62)}), nil, []string{"x"}, nil)
	if !slices.Equal(tok.Scopes, []string{"x", "y"}) || tok.Expiry.Before(time.Unix(1000, 0)) {
		t.Errorf("token %v scopes %q", tok, tok.Scopes)
	}
	tok, _ = c.newToken(response(map[string]any{}), nil, []string{"x"}, []string{"old"})
	if !slices.Equal(tok.Scopes, []string{"old"}) || !tok.Expiry.IsZero() {
		t.Errorf("refresh without scope: %q", tok.Scopes)
	}
	if _, err := c.newToken(response(map[string]any{"scope": "bad\"scope"}), nil, nil, nil); !errors.Is(err, errTokenResponse) {
		t.Errorf("invalid scope accepted: %v", err)
	}
}

// TestClientSecretBasicSendsClientID: with client_secret_basic the
// client_id also goes in the body of the code exchange and of the refresh
// request (RFC 6749 §3.2.1), as servers such as the MCP Python SDK's
// example require, and matches the Basic credentials.
func TestClientSecretBasicSendsClientID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.ASOptions{AuthMethods: []string{"client_secret_basic"}, IssueRefreshTokens: true}, oauthtest.ResourceOptions{}, nil)
	if err := e.login(ctx); err != nil {
		t.Fatal(err)
	}
	resource, _ := e.c.canonicalResource(e.rs.MCPURL())
	e.clock.Advance(2 * time.Hour)
	if tok, err := e.c.currentToken(ctx, resource); err != nil || tok == nil {
		t.Fatalf("refresh: %v", err)
	}
	trs := e.as.TokenRequests()
	grants := map[string]bool{}
	for _, tr := range trs {
		grants[tr.Form.Get("grant_type")] = true
		r := &http.Request{Header: tr.Header}
		id, _, ok := r.BasicAuth()
		if !ok || id == "" {
			t.Errorf("%s: no Basic credentials", tr.Form.Get("grant_type"))
		}
		if got := tr.Form.Get("client_id"); got != id {
			t.Errorf("%s: client_id in the body %q, Basic user %q", tr.Form.Get("grant_type"), got, id)
		}
		if tr.Form.Has("client_secret") {
			t.Errorf("%s: client_secret in the body as well as in the header", tr.Form.Get("grant_type"))
		}
	}
	if !grants["authorization_code"] || !grants["refresh_token"] {
		t.Fatalf("token requests seen: %v", grants)
	}
}

// TestTokenSource: the x/oauth2 view of the client authorizes on first
// use, then hands out the stored token (no refresh token), refreshed when
// it expires; a bad URL is an error.
func TestTokenSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.ASOptions{IssueRefreshTokens: true, ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
	ts := e.c.TokenSource(ctx, e.rs.MCPURL())
	first, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ts.Token()
	if err != nil || again.AccessToken != first.AccessToken || first.RefreshToken != "" || first.Type() != "Bearer" {
		t.Fatalf("second Token = %v, %v (first %v)", again, err, first)
	}
	if n := len(e.as.Authorizations()); n != 1 {
		t.Errorf("authorizations = %d, want 1", n)
	}
	e.clock.Advance(2 * time.Minute)
	renewed, err := ts.Token()
	if err != nil || renewed.AccessToken == first.AccessToken || !renewed.Expiry.After(first.Expiry) {
		t.Errorf("after expiry: %v, %v", renewed, err)
	}
	// The server does not rotate: the refresh token is kept (RFC 6749 §6)
	// and serves a second refresh.
	e.clock.Advance(2 * time.Minute)
	if third, err := ts.Token(); err != nil || third.AccessToken == renewed.AccessToken {
		t.Errorf("second refresh: %v, %v", third, err)
	}
	if n, trs := len(e.as.Authorizations()), e.as.TokenRequests(); n != 1 || len(trs) != 3 || trs[2].Form.Get("refresh_token") != trs[1].Form.Get("refresh_token") {
		t.Errorf("authorizations %d, token requests %d; want 1 and 3 (two refreshes with one refresh token)", n, len(trs))
	}
	if _, err := e.c.TokenSource(ctx, "http://[::1").Token(); err == nil {
		t.Error("a malformed server URL gave a token")
	}
}
