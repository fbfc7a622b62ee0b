package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// hookAuthorizer does what FollowRedirects does, with hooks: before runs
// after Start, before the authorization URL is visited; after may replace
// the captured redirect.
type hookAuthorizer struct {
	before func(req *AuthorizationRequest, authURL string)
	after  func(redirect *url.URL) *url.URL
}

func (h *hookAuthorizer) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	authURL, err := req.Start(ctx, DefaultRedirectURI)
	if err != nil {
		return nil, err
	}
	if h.before != nil {
		h.before(req, authURL)
	}
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	resp, err := req.HTTPClient().Do(hreq)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, err
	}
	if h.after != nil {
		loc = h.after(loc)
	}
	return loc, nil
}

func withQuery(u *url.URL, fn func(q url.Values)) *url.URL {
	out := *u
	q := out.Query()
	fn(q)
	out.RawQuery = q.Encode()
	return &out
}

// TestCL12IssuerParameter applies the RFC 9207 table end to end; on a
// mismatch neither the code nor the error text is used.
func TestCL12IssuerParameter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		as            oauthtest.ASOptions
		wantErr       error
		wantNotDenied bool // the response's error must not surface
	}{
		{"CL-12 advertised and correct: proceed", oauthtest.ASOptions{ISS: oauthtest.ISSCorrect}, nil, false},
		{"CL-12 bad input: advertised but missing", oauthtest.ASOptions{ISS: oauthtest.ISSOmit}, errIssuerMissing, false},
		{"CL-12 bad input: wrong issuer", oauthtest.ASOptions{ISS: oauthtest.ISSWrong}, errIssuerParameterMismatch, false},
		{"CL-12 bad input: trailing-slash variant", oauthtest.ASOptions{ISS: oauthtest.ISSNormalized}, errIssuerParameterMismatch, false},
		{"CL-12 not advertised and absent: proceed", oauthtest.ASOptions{NoISSAdvertised: true, ISS: oauthtest.ISSOmit}, nil, false},
		{"CL-12 bad input: unadvertised but wrong", oauthtest.ASOptions{NoISSAdvertised: true, ISS: oauthtest.ISSWrong}, errIssuerParameterMismatch, false},
		{"CL-12 not advertised but correct: proceed", oauthtest.ASOptions{NoISSAdvertised: true, ISS: oauthtest.ISSCorrect}, nil, false},
		{"CL-12 wrong issuer with an error response: error text unused", oauthtest.ASOptions{ISS: oauthtest.ISSWrong, AuthorizeError: "access_denied"}, errIssuerParameterMismatch, true},
		{"correct issuer with an error response", oauthtest.ASOptions{AuthorizeError: "access_denied"}, errAuthorizationResponse, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.as, oauthtest.ResourceOptions{}, nil)
			err := e.c.Login(context.Background(), e.rs.MCPURL())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			denied := errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeAccessDenied})
			if tt.wantNotDenied && denied {
				t.Errorf("the error of an unverified response was used")
			}
			if tt.name == "correct issuer with an error response" && !denied {
				t.Errorf("err = %v, want the server's access_denied", err)
			}
			if tt.wantErr != nil && e.as.Hits("/token") != 0 {
				t.Errorf("the code was redeemed despite %v", tt.wantErr)
			}
			e.noLeak(err)
		})
	}
}

// TestCheckIssParameter: simple string comparison, no normalization.
func TestCheckIssParameter(t *testing.T) {
	t.Parallel()
	const iss = "https://as.example.com/tenant"
	tests := []struct {
		name       string
		advertised bool
		query      string
		wantErr    error
	}{
		{"CL-12 identical", true, "iss=https%3A%2F%2Fas.example.com%2Ftenant", nil},
		{"CL-12 case folded host", true, "iss=https%3A%2F%2FAS.example.com%2Ftenant", errIssuerParameterMismatch},
		{"CL-12 default port added", true, "iss=https%3A%2F%2Fas.example.com%3A443%2Ftenant", errIssuerParameterMismatch},
		{"CL-12 trailing slash", true, "iss=https%3A%2F%2Fas.example.com%2Ftenant%2F", errIssuerParameterMismatch},
		{"CL-12 percent-encoded path", false, "iss=https%3A%2F%2Fas.example.com%2Ften%2561nt", errIssuerParameterMismatch},
		{"CL-12 empty value present", false, "iss=", errIssuerParameterMismatch},
		{"CL-12 repeated", true, "iss=https%3A%2F%2Fas.example.com%2Ftenant&iss=https%3A%2F%2Fas.example.com%2Ftenant", errIssuerParameterMismatch},
		{"CL-12 absent, advertised", true, "code=x", errIssuerMissing},
		{"CL-12 absent, not advertised", false, "code=x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := url.ParseQuery(tt.query)
			if err := checkIssParameter(tt.advertised, iss, q); !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestCL10State: the response must carry the request's single-use state.
func TestCL10State(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(u *url.URL) *url.URL
		advance time.Duration
		wantErr error
	}{
		{"CL-10 bad input: missing state", func(u *url.URL) *url.URL { return withQuery(u, func(q url.Values) { q.Del("state") }) }, 0, errUnknownState},
		{"CL-10 bad input: unknown state", func(u *url.URL) *url.URL { return withQuery(u, func(q url.Values) { q.Set("state", "forged") }) }, 0, errUnknownState},
		{"CL-10 two states", func(u *url.URL) *url.URL {
			return withQuery(u, func(q url.Values) { q.Add("state", q.Get("state")) })
		}, 0, errUnknownState},
		{"CL-10 expired state", nil, 11 * time.Minute, errUnknownState},
		{"response at another redirect URI", func(u *url.URL) *url.URL { v := *u; v.Path = "/elsewhere"; return &v }, 0, errRedirectMismatch},
		{"no code", func(u *url.URL) *url.URL { return withQuery(u, func(q url.Values) { q.Del("code") }) }, 0, errAuthorizationResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e *env
			e = newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
				c.Authorizer = &hookAuthorizer{after: func(u *url.URL) *url.URL {
					e.clock.Advance(tt.advance)
					if tt.mutate != nil {
						return tt.mutate(u)
					}
					return u
				}}
			})
			err := e.c.Login(context.Background(), e.rs.MCPURL())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if e.as.Hits("/token") != 0 {
				t.Error("a token request was made")
			}
		})
	}
	t.Run("CL-10 bad input: replayed state", func(t *testing.T) {
		t.Parallel()
		var first *url.URL
		var e *env
		e = newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
			c.Authorizer = &hookAuthorizer{after: func(u *url.URL) *url.URL {
				if first == nil {
					first = u
					return u
				}
				return first // the old response, replayed
			}}
		})
		ctx := context.Background()
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		_ = e.c.Logout(ctx, e.rs.MCPURL())
		if err := e.c.Login(ctx, e.rs.MCPURL()); !errors.Is(err, errUnknownState) {
			t.Fatalf("replayed response: err = %v, want errUnknownState", err)
		}
		state := first.Query().Get("state")
		if _, _, err := e.c.complete(ctx, first, state); !errors.Is(err, errUnknownState) {
			t.Fatalf("consumed state accepted again: %v", err)
		}
		if n := e.as.Hits("/token"); n != 1 {
			t.Errorf("token requests = %d, want 1", n)
		}
	})
}

// TestCL11RecordBeforeRedirect: when the Authorizer receives the URL, the
// state record already holds everything the response will be checked and
// redeemed against.
func TestCL11RecordBeforeRedirect(t *testing.T) {
	t.Parallel()
	var e *env
	checked := false
	e = newEnv(t, oauthtest.ASOptions{ScopesSupported: []string{"read", "offline_access"}}, oauthtest.ResourceOptions{ChallengeScope: []string{"read"}}, func(c *Config) {
		c.Authorizer = &hookAuthorizer{before: func(req *AuthorizationRequest, authURL string) {
			checked = true
			rec, ok := e.c.pending.Get(req.State())
			if !ok {
				t.Fatal("CL-11: no state record before the redirect")
			}
			u, _ := url.Parse(authURL)
			q := u.Query()
			if rec.issuer != e.as.Issuer() || !rec.issParameterSupported {
				t.Errorf("CL-11: recorded issuer %q, want %q", rec.issuer, e.as.Issuer())
			}
			if rec.tokenEndpoint != e.as.Issuer()+"/token" {
				t.Errorf("recorded token endpoint %q", rec.tokenEndpoint)
			}
			if pkce.Challenge(rec.verifier) != q.Get("code_challenge") {
				t.Error("recorded verifier does not match the challenge sent")
			}
			if rec.indicator != e.rs.MCPURL() || rec.redirectURI != q.Get("redirect_uri") || q.Get("state") != rec.state {
				t.Errorf("record %+v does not match the request %v", rec, q)
			}
			if !slices.Equal(rec.scopes, []string{"read", "offline_access"}) || q.Get("scope") != "read offline_access" {
				t.Errorf("recorded scopes %q, sent %q", rec.scopes, q.Get("scope"))
			}
		}}
	})
	if err := e.login(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("hook not run")
	}
	if n := e.c.pending.Len(); n != 0 {
		t.Errorf("%d state records left after the response", n)
	}
}

// TestCL13RecordedTokenEndpoint: the code goes to the token endpoint
// recorded before the redirect, even if discovery changes meanwhile, and a
// response claiming another issuer is never redeemed anywhere.
func TestCL13RecordedTokenEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("CL-13 discovery replaced mid-flight", func(t *testing.T) {
		t.Parallel()
		as2 := oauthtest.NewAS(t, oauthtest.ASOptions{})
		var e *env
		e = newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
			c.Authorizer = &hookAuthorizer{before: func(*AuthorizationRequest, string) {
				d, _ := e.store.Discovery(ctx, e.rs.MCPURL())
				d.Issuer = as2.Issuer()
				d.AuthServer.Issuer, d.AuthServer.TokenEndpoint = as2.Issuer(), as2.Issuer()+"/token"
				_ = e.store.PutDiscovery(ctx, d)
			}}
		})
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		if e.as.Hits("/token") != 1 || as2.TotalHits() != 0 {
			t.Errorf("token requests: recorded AS %d, other AS %d", e.as.Hits("/token"), as2.TotalHits())
		}
	})
	t.Run("CL-13 response for AS1 carrying AS2's issuer", func(t *testing.T) {
		t.Parallel()
		as2 := oauthtest.NewAS(t, oauthtest.ASOptions{})
		var e *env
		e = newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
			c.Authorizer = &hookAuthorizer{after: func(u *url.URL) *url.URL {
				return withQuery(u, func(q url.Values) { q.Set("iss", as2.Issuer()) })
			}}
		})
		if err := e.c.Login(ctx, e.rs.MCPURL()); !errors.Is(err, errIssuerParameterMismatch) {
			t.Fatalf("err = %v", err)
		}
		if e.as.Hits("/token")+as2.TotalHits() != 0 {
			t.Error("the code was sent to a token endpoint")
		}
	})
}

// TestCL09CL24TokenRequest: PKCE is S256 with a fresh verifier per request
// and the token request carries exactly what OAuth 2.1 §4.1.3 needs.
func TestCL09CL24TokenRequest(t *testing.T) {
	t.Parallel()
	if got := pkce.Challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("CL-09 RFC 7636 Appendix B vector: %s", got)
	}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
	ctx := context.Background()
	for range 2 {
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		_ = e.c.Logout(ctx, e.rs.MCPURL())
	}
	az, trs := e.as.Authorizations(), e.as.TokenRequests()
	if az[0].Get("code_challenge") == az[1].Get("code_challenge") || az[0].Get("state") == az[1].Get("state") {
		t.Error("CL-09/CL-10: verifier or state reused across requests")
	}
	for i, tr := range trs {
		f := tr.Form
		v := f.Get("code_verifier")
		if !pkce.ValidVerifier(v) || len(v) != 43 || pkce.Challenge(v) != az[i].Get("code_challenge") || az[i].Get("code_challenge_method") != "S256" {
			t.Errorf("CL-09: verifier %d does not match its S256 challenge", i)
		}
		want := url.Values{
			"grant_type":    {"authorization_code"},
			"code":          {f.Get("code")},
			"code_verifier": {v},
			"client_id":     {az[i].Get("client_id")},
			"redirect_uri":  {az[i].Get("redirect_uri")},
			"resource":      {e.rs.MCPURL()},
		}
		if f.Encode() != want.Encode() || f.Get("code") == "" {
			t.Errorf("CL-24: token request form\n got %v\nwant %v", f, want)
		}
	}
}

// TestCL14CL20Scopes: challenge scope, else scopes_supported, else none;
// offline_access only when the authorization server lists it.
func TestCL14CL20Scopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		asScopes  []string
		challenge []string
		supported []string
		disable   bool
		want      string // "" means the scope parameter is absent
	}{
		{"CL-14 challenge scope", nil, []string{"files:read"}, []string{"a", "b"}, false, "files:read"},
		{"CL-14 challenge outside scopes_supported is still used", nil, []string{"x:y"}, []string{"a"}, false, "x:y"},
		{"CL-14 all of scopes_supported", nil, nil, []string{"mcp:basic", "mcp:read", "mcp:write"}, false, "mcp:basic mcp:read mcp:write"},
		{"CL-14 omitted when undefined", nil, nil, nil, false, ""},
		{"CL-20 offline_access when listed", []string{"files:read", "offline_access"}, []string{"files:read"}, nil, false, "files:read offline_access"},
		{"CL-20 not when unlisted", []string{"files:read"}, []string{"files:read"}, nil, false, "files:read"},
		{"CL-20 removed from a challenge when unlisted", []string{"a"}, []string{"a", "offline_access"}, nil, false, "a"},
		{"CL-20 not added to an omitted scope", []string{"offline_access"}, nil, nil, false, ""},
		{"CL-20 disabled", []string{"a", "offline_access"}, []string{"a"}, nil, true, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{ScopesSupported: tt.asScopes},
				oauthtest.ResourceOptions{ChallengeScope: tt.challenge, ScopesSupported: tt.supported},
				func(c *Config) { c.DisableOfflineAccess = tt.disable })
			if err := e.login(context.Background()); err != nil {
				t.Fatal(err)
			}
			q := e.as.Authorizations()[0]
			if got := q.Get("scope"); got != tt.want || q.Has("scope") != (tt.want != "") {
				t.Errorf("scope = %q (present %v), want %q", got, q.Has("scope"), tt.want)
			}
		})
	}
}

// TestCL21RedirectURI: redirect URIs are https or loopback http.
func TestCL21RedirectURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri string
		ok  bool
	}{
		{"http://127.0.0.1:8080/callback", true},
		{"http://[::1]/callback", true},
		{"http://localhost/callback", true},
		{"https://app.example.com/callback", true},
		{"http://app.example.com/callback", false},
		{"http://127.0.0.1.nip.io/callback", false},
		{"javascript:alert(1)", false},
		{"https://app.example.com/callback#f", false},
		{"https://u:p@app.example.com/callback", false},
		{"/callback", false},
		{"com.example.app:/callback", false},
	}
	for _, tt := range tests {
		if err := checkRedirectURI(tt.uri); (err == nil) != tt.ok {
			t.Errorf("CL-21 checkRedirectURI(%q) = %v, want ok=%v", tt.uri, err, tt.ok)
		}
	}
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
		c.Authorizer = &FollowRedirects{RedirectURI: "http://app.example.com/callback"}
	})
	if err := e.c.Login(context.Background(), e.rs.MCPURL()); !errors.Is(err, errUnsafeURL) {
		t.Fatalf("err = %v, want errUnsafeURL", err)
	}
	if e.as.Hits("/register")+e.as.Hits("/authorize")+e.as.Hits("/token") != 0 {
		t.Errorf("nothing beyond discovery may happen with a bad redirect URI: %q", e.as.Paths())
	}
}

// TestAuthorizerErrors: an Authorizer that fails, or returns without
// starting, leaves no state record behind.
func TestAuthorizerErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("user closed the browser")
	tests := []struct {
		name    string
		a       Authorizer
		wantErr error
	}{
		{"fails after Start", AuthorizerFunc(func(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
			if _, err := req.Start(ctx, DefaultRedirectURI); err != nil {
				return nil, err
			}
			return nil, boom
		}), errAuthorizer},
		{"never starts", AuthorizerFunc(func(context.Context, *AuthorizationRequest) (*url.URL, error) { return nil, nil }), errAuthorizer},
		{"starts twice", AuthorizerFunc(func(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
			_, _ = req.Start(ctx, DefaultRedirectURI)
			_, err := req.Start(ctx, DefaultRedirectURI)
			return nil, err
		}), errAuthorizer},
		{"no redirect", AuthorizerFunc(func(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
			_, err := req.Start(ctx, DefaultRedirectURI)
			return nil, err
		}), errAuthorizer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = tt.a })
			err := e.c.Login(context.Background(), e.rs.MCPURL())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n := e.c.pending.Len(); n != 0 {
				t.Errorf("%d state records left", n)
			}
		})
	}
}

// TestPendingStatesBounded: at most maxPending authorizations in flight,
// the oldest dropped first, each for pendingTTL.
func TestPendingStatesBounded(t *testing.T) {
	t.Parallel()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	c, err := New(Config{Authorizer: &FollowRedirects{}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	add := func(state string) {
		c.pending.Add(state, &pendingAuthorization{state: state}, clock.Now().Add(pendingTTL))
	}
	for i := range maxPending + 1 {
		add(fmt.Sprint(i))
	}
	if n := c.pending.Len(); n != maxPending {
		t.Fatalf("%d records held, want the bound %d", n, maxPending)
	}
	if _, ok := c.pending.Take("0", nil); ok {
		t.Fatal("the oldest record survived the bound")
	}
	clock.Advance(pendingTTL)
	if _, ok := c.pending.Take("1", nil); ok {
		t.Fatal("a record was accepted after pendingTTL")
	}
}

// TestPasteAuthorizer: the URL is printed and the pasted redirect used.
func TestPasteAuthorizer(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = &Paste{Out: out, In: pr} })
	go func() {
		// Play the user: wait for the URL, open it, paste the final address.
		var authURL string
		for authURL == "" {
			time.Sleep(time.Millisecond)
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(line, "  http") && strings.Contains(out.String(), "paste") {
					authURL = strings.TrimSpace(line)
				}
			}
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Get(authURL)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		resp.Body.Close()
		fmt.Fprintln(pw, resp.Header.Get("Location"))
	}()
	ctx := context.Background()
	if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	if tok, err := e.c.currentToken(ctx, e.rs.MCPURL()); err != nil || tok == nil {
		t.Fatalf("no token after pasting: %v", err)
	}
	bad := &Paste{Out: io.Discard, In: strings.NewReader("https://elsewhere.example.com/?code=x\n")}
	e2 := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = bad })
	if err := e2.c.Login(ctx, e2.rs.MCPURL()); !errors.Is(err, errAuthorizer) || e2.as.Hits("/token") != 0 {
		t.Fatalf("a paste from another address: err = %v", err)
	}
}
