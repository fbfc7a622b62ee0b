package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// revocationRequest is one request a fake revocation endpoint received.
type revocationRequest struct {
	form url.Values
	auth string // the Authorization header
}

// fakeRevocation is a revocation endpoint answering with answer and
// recording what it received.
type fakeRevocation struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []revocationRequest
	answer http.HandlerFunc
}

func newFakeRevocation(t *testing.T, answer http.HandlerFunc) *fakeRevocation {
	f := &fakeRevocation{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		f.seen = append(f.seen, revocationRequest{form: r.PostForm, auth: r.Header.Get("Authorization")})
		f.mu.Unlock()
		f.answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRevocation) requests() []revocationRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]revocationRequest(nil), f.seen...)
}

// storedToken returns the token stored for the env's resource, nil when
// there is none.
func (e *env) storedToken(ctx context.Context) (*tokenstore.Key, *tokenstore.Token) {
	e.t.Helper()
	resource, err := e.c.canonicalResource(e.rs.MCPURL())
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := e.store.Discovery(ctx, resource)
	if err != nil {
		e.t.Fatal(err)
	}
	reg := e.c.currentRegistration(ctx, d.Issuer)
	if reg == nil {
		e.t.Fatal("no registration")
	}
	k := tokenstore.Key{Issuer: d.Issuer, Resource: d.ResourceIndicator, ClientID: reg.ClientID}
	tok, err := e.store.Token(ctx, k)
	if errors.Is(err, tokenstore.ErrNotFound) {
		return &k, nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return &k, tok
}

// TestLogoutRevocation: Logout revokes the refresh token, then the access
// token, at the advertised revocation_endpoint with the client's token
// endpoint authentication, and deletes the token whatever the answer; a
// failure is ErrRevocation (with the server's error when it sent one),
// never followed to another origin, bounded by Config.Timeout.
func TestLogoutRevocation(t *testing.T) {
	t.Parallel()
	elsewhere := newFakeRevocation(t, func(w http.ResponseWriter, _ *http.Request) {})
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, tc := range []struct {
		name       string
		answer     http.HandlerFunc // nil: no revocation_endpoint published
		authMethod string           // token_endpoint_auth_methods_supported; "" = none (public)
		wantErr    error
		wantCode   oauthmeta.ErrorCode // the server's error, wrapped
	}{
		{"revoked", func(w http.ResponseWriter, _ *http.Request) {}, "", nil, ""},
		{"revoked with client_secret_basic", func(w http.ResponseWriter, _ *http.Request) {}, "client_secret_basic", nil, ""},
		{"200 with a body", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }, "", nil, ""},
		{"no revocation_endpoint", nil, "", nil, ""},
		{"server error", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, "",
			ErrRevocation, ""},
		{"refused", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"unsupported_token_type"}`))
		}, "", ErrRevocation, oauthmeta.CodeUnsupportedTokenType},
		{"redirect to another origin", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.srv.URL+"/revoke", http.StatusTemporaryRedirect)
		}, "", ErrRevocation, ""},
		{"no answer within Timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		}, "", ErrRevocation, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := oauthtest.ASOptions{IssueRefreshTokens: true}
			if tc.authMethod != "" {
				opts.AuthMethods = []string{tc.authMethod}
			}
			var rev *fakeRevocation
			if tc.answer != nil {
				rev = newFakeRevocation(t, tc.answer)
				opts.RevocationEndpoint = rev.srv.URL + "/revoke"
			}
			e := newEnv(t, opts, oauthtest.ResourceOptions{}, func(c *Config) { c.Timeout = time.Second })
			if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
				t.Fatal(err)
			}
			key, tok := e.storedToken(ctx)
			if tok == nil || tok.RefreshToken == "" {
				t.Fatalf("login stored %v", tok)
			}
			reg, _ := e.store.Registration(ctx, key.Issuer)

			err := e.c.Logout(ctx, e.rs.MCPURL())
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Logout: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Logout: %v, want %v", err, tc.wantErr)
			case tc.wantCode != "" && !errors.Is(err, &oauthmeta.Error{Code: tc.wantCode}):
				t.Fatalf("Logout: %v, want the server's %s", err, tc.wantCode)
			case err != nil && (strings.Contains(err.Error(), tok.AccessToken) || strings.Contains(err.Error(), tok.RefreshToken)):
				t.Fatalf("the error shows a token: %v", err)
			}
			if _, left := e.storedToken(ctx); left != nil {
				t.Fatal("the token is still stored")
			}
			if _, err := e.store.Registration(ctx, key.Issuer); err != nil {
				t.Fatalf("the registration was dropped: %v", err)
			}
			if rev == nil {
				return
			}
			got := rev.requests()
			if len(got) != 2 {
				t.Fatalf("%d revocation requests, want 2 (refresh token, then access token)", len(got))
			}
			for i, want := range []struct{ token, hint string }{
				{tok.RefreshToken, "refresh_token"}, {tok.AccessToken, "access_token"},
			} {
				f := got[i].form
				if f.Get("token") != want.token || f.Get("token_type_hint") != want.hint || f.Get("client_id") != reg.ClientID {
					t.Errorf("request %d: %v, want the %s of client %s", i, f, want.hint, reg.ClientID)
				}
				user, pass, basic := (&http.Request{Header: http.Header{"Authorization": {got[i].auth}}}).BasicAuth()
				if tc.authMethod == "client_secret_basic" {
					if !basic || user != reg.ClientID || pass != reg.ClientSecret {
						t.Errorf("request %d: Authorization %q, want Basic for %s", i, got[i].auth, reg.ClientID)
					}
				} else if got[i].auth != "" || f.Has("client_secret") {
					t.Errorf("request %d: a public client sent credentials", i)
				}
			}
			if n := len(elsewhere.requests()); n != 0 {
				t.Errorf("the redirect was followed %d times", n)
			}
		})
	}
}

// TestLogoutWithoutSession: Logout before any login does nothing and
// leaves the resource's login lock free for the next Login.
func TestLogoutWithoutSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
	if err := e.c.Logout(ctx, e.rs.MCPURL()); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.c.Login(lctx, e.rs.MCPURL()); err != nil {
		t.Fatalf("Login after Logout: %v", err)
	}
	if err := e.c.Logout(ctx, e.rs.MCPURL()); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	if _, tok := e.storedToken(ctx); tok != nil {
		t.Fatal("the token is still stored")
	}
}
