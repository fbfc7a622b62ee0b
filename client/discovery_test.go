package client

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestCL01ChallengeParsing: WWW-Authenticate is parsed robustly on 401
// and 403: several challenges and fields, quoted strings, escapes,
// case-insensitive scheme and parameter names.
func TestCL01ChallengeParsing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		headers    []string
		wantScopes []string
		wantRM     string
		wantError  string
	}{
		{"CL-01 requirement example", []string{`Bearer realm="x", scope="a b", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", DPoP algs="ES256"`},
			[]string{"a", "b"}, "https://h/.well-known/oauth-protected-resource/mcp", ""},
		{"Bearer after DPoP in one field", []string{`DPoP algs="ES256", Bearer scope="files:read"`}, []string{"files:read"}, "", ""},
		{"two header fields", []string{`DPoP algs="ES256"`, `Bearer error="insufficient_scope", scope="w"`}, []string{"w"}, "", "insufficient_scope"},
		{"case-insensitive names", []string{`bEARER SCOPE="s", Resource_Metadata="https://h/m"`}, []string{"s"}, "https://h/m", ""},
		{"escaped quote in realm", []string{`Bearer realm="a \"quoted\" realm", scope="s"`}, []string{"s"}, "", ""},
		{"token value without quotes", []string{`Bearer scope=s, error=invalid_token`}, []string{"s"}, "", "invalid_token"},
		{"malformed header is no challenge", []string{`Bearer scope="unterminated`}, nil, "", ""},
		{"no Bearer challenge", []string{`Basic realm="x"`}, nil, "", ""},
		{"illegal scope characters ignored", []string{`Bearer scope="a\\b"`}, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, v := range tt.headers {
				h.Add("WWW-Authenticate", v)
			}
			ch := parseChallenge(h).Challenge
			if !slices.Equal(ch.Scopes(), tt.wantScopes) {
				t.Errorf("scopes = %q, want %q", ch.Scopes(), tt.wantScopes)
			}
			if got := ch.Value(oauthmeta.ParamResourceMetadata); got != tt.wantRM {
				t.Errorf("resource_metadata = %q, want %q", got, tt.wantRM)
			}
			if got := ch.Value(oauthmeta.ParamError); got != tt.wantError {
				t.Errorf("error = %q, want %q", got, tt.wantError)
			}
		})
	}
}

// TestCL02CL06DiscoveryOrder checks which documents are fetched, in which
// order, for the server layouts of the conformance metadata scenarios.
func TestCL02CL06DiscoveryOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		as        oauthtest.ASOptions
		rs        oauthtest.ResourceOptions
		wantRS    []string // discovery paths at the resource, in order
		wantAS    []string // metadata paths at the AS, in order
		wantOrigR bool     // resource indicator is the origin
	}{
		{"CL-02 header pointer first, root never probed", oauthtest.ASOptions{}, oauthtest.ResourceOptions{},
			[]string{"/.well-known/oauth-protected-resource/mcp"}, []string{"/.well-known/oauth-authorization-server"}, false},
		{"CL-02 path-inserted without pointer", oauthtest.ASOptions{}, oauthtest.ResourceOptions{NoPointer: true},
			[]string{"/.well-known/oauth-protected-resource/mcp"}, []string{"/.well-known/oauth-authorization-server"}, false},
		{"CL-02 root only, no pointer", oauthtest.ASOptions{}, oauthtest.ResourceOptions{PRMAt: "root", NoPointer: true},
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"},
			[]string{"/.well-known/oauth-authorization-server"}, true},
		{"CL-02 custom URL from the pointer only", oauthtest.ASOptions{}, oauthtest.ResourceOptions{PRMAt: "custom"},
			[]string{"/custom/prm.json"}, []string{"/.well-known/oauth-authorization-server"}, false},
		{"CL-06 OpenID configuration after RFC 8414", oauthtest.ASOptions{MetadataAt: "openid"}, oauthtest.ResourceOptions{},
			[]string{"/.well-known/oauth-protected-resource/mcp"},
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}, false},
		{"CL-06 issuer with path, RFC 8414 inserted, root trap untouched", oauthtest.ASOptions{PathPrefix: "/tenant1"}, oauthtest.ResourceOptions{},
			[]string{"/.well-known/oauth-protected-resource/mcp"},
			[]string{"/.well-known/oauth-authorization-server/tenant1"}, false},
		{"CL-06 issuer with path, OpenID appended last", oauthtest.ASOptions{PathPrefix: "/tenant1", MetadataAt: "openid-appended"}, oauthtest.ResourceOptions{},
			[]string{"/.well-known/oauth-protected-resource/mcp"},
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.as, tt.rs, nil)
			ctx := context.Background()
			if err := e.login(ctx); err != nil {
				t.Fatal(err)
			}
			gotRS := slices.DeleteFunc(e.rs.Paths(), func(p string) bool { return p == "/mcp" })
			if !slices.Equal(gotRS, tt.wantRS) {
				t.Errorf("resource paths = %q, want %q", gotRS, tt.wantRS)
			}
			var gotAS []string
			for _, p := range e.as.Paths() {
				if len(p) > 0 && (slices.Contains(tt.wantAS, p) || p == "/.well-known/oauth-authorization-server" || p == "/.well-known/openid-configuration" || p == "/tenant1/.well-known/openid-configuration" || p == "/.well-known/openid-configuration/tenant1" || p == "/.well-known/oauth-authorization-server/tenant1") {
					gotAS = append(gotAS, p)
				}
			}
			if !slices.Equal(gotAS, tt.wantAS) {
				t.Errorf("authorization server metadata paths = %q, want %q", gotAS, tt.wantAS)
			}
			d, err := e.store.Discovery(ctx, e.rs.MCPURL())
			if err != nil {
				t.Fatal(err)
			}
			want := e.rs.MCPURL()
			if tt.wantOrigR {
				want = e.rs.URL
			}
			if d.ResourceIndicator != want {
				t.Errorf("resource indicator = %q, want %q", d.ResourceIndicator, want)
			}
			if got := e.as.Authorizations()[0].Get("resource"); got != want {
				t.Errorf("CL-04: authorize resource = %q, want %q (byte for byte from the metadata)", got, want)
			}
		})
	}
}

// TestCL03ResourceValidation: the metadata's resource is validated before
// any authorization request; a mismatch aborts.
func TestCL03ResourceValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rs      oauthtest.ResourceOptions
		prefix  bool
		wantErr error
	}{
		{"CL-03 bad input: resource of another server", oauthtest.ResourceOptions{PRMResource: "https://evil.example.com/mcp"}, false, errResourceMismatch},
		{"CL-03 trailing slash variant", oauthtest.ResourceOptions{PRMResource: "SELF/"}, false, errResourceMismatch},
		{"CL-03 root document through the pointer is refused", oauthtest.ResourceOptions{PRMAt: "root"}, false, errResourceMismatch},
		{"CL-03 root document through the pointer, prefix opt-in", oauthtest.ResourceOptions{PRMAt: "root"}, true, nil},
		{"CL-03 another origin is refused even with prefix opt-in", oauthtest.ResourceOptions{PRMResource: "https://evil.example.com"}, true, errResourceMismatch},
		{"CL-03 root document found by probing", oauthtest.ResourceOptions{PRMAt: "root", NoPointer: true}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.InsecureAllowResourcePrefix = tt.prefix })
			rs := tt.rs
			if rs.PRMResource == "SELF/" {
				rs.PRMResource = e.rs.MCPURL() + "/"
			}
			e.rs.Update(func(o *oauthtest.ResourceOptions) { *o = rs })
			err := e.login(context.Background())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, oauthmeta.ErrResourceMismatch) {
					t.Errorf("err does not match oauthmeta.ErrResourceMismatch: %v", err)
				}
				if n := e.as.TotalHits(); n != 0 {
					t.Errorf("the authorization server was contacted %d times; authorization must not start", n)
				}
			}
		})
	}
}

func TestResourcePrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix, resource string
		want             bool
	}{
		{"https://h", "https://h/mcp", true},
		{"https://h/", "https://h/mcp", true},
		{"https://h/a", "https://h/a/mcp", true},
		{"https://h/a", "https://h/ab", false},
		{"https://h/a/mcp", "https://h/a", false},
		{"https://h/mcp", "https://h/mcp", true},
		{"https://other", "https://h/mcp", false},
		{"http://h", "https://h/mcp", false},
		{"https://h:8443", "https://h/mcp", false},
		{"https://h?q=1", "https://h/mcp", false},
		{"not a url", "https://h/mcp", false},
	}
	for _, tt := range tests {
		if got := resourcePrefix(tt.prefix, tt.resource); got != tt.want {
			t.Errorf("resourcePrefix(%q, %q) = %v, want %v", tt.prefix, tt.resource, got, tt.want)
		}
	}
}

// TestAuthServerMetadataBadInput covers CL-07, CL-08 and CL-22: metadata
// that must not be used, and no authorization request follows.
func TestAuthServerMetadataBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		as       oauthtest.ASOptions
		wantErrs []error
	}{
		{"CL-07 bad input: metadata names another issuer", oauthtest.ASOptions{MetadataIssuer: "https://attacker.example.com"},
			[]error{errNoAuthServer, errIssuerMismatch, oauthmeta.ErrIssuerMismatch}},
		{"CL-07 trailing-slash issuer", oauthtest.ASOptions{MetadataIssuer: "SELF/"}, []error{errIssuerMismatch}},
		{"CL-08 bad input: no code_challenge_methods_supported", oauthtest.ASOptions{OmitCodeChallenge: true}, []error{errNoAuthServer, errPKCEUnsupported}},
		{"CL-08 bad input: only plain", oauthtest.ASOptions{CodeChallengeMethods: []string{"plain"}}, []error{errPKCEUnsupported}},
		{"CL-08 empty list", oauthtest.ASOptions{CodeChallengeMethods: []string{}}, []error{errPKCEUnsupported}},
		{"CL-22 bad input: javascript: authorization endpoint", oauthtest.ASOptions{AuthorizationEndpoint: "javascript:alert(1)"},
			[]error{errInvalidMetadata, oauthmeta.ErrUnsafeURL}},
		{"CL-22 data: authorization endpoint", oauthtest.ASOptions{AuthorizationEndpoint: "data:text/html,<script>alert(1)</script>"}, []error{oauthmeta.ErrUnsafeURL}},
		{"CL-22 plain http to a public host", oauthtest.ASOptions{AuthorizationEndpoint: "http://as.example.com/authorize"}, []error{oauthmeta.ErrUnsafeURL}},
		{"CL-06 no metadata anywhere", oauthtest.ASOptions{MetadataAt: "none"}, []error{errNoAuthServer, errNoAuthServerMetadata}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			authz := &countingAuthorizer{inner: &FollowRedirects{}}
			e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) { c.Authorizer = authz })
			opts := tt.as
			if opts.MetadataIssuer == "SELF/" {
				opts.MetadataIssuer = e.as.Issuer() + "/"
			}
			e.as.Update(func(o *oauthtest.ASOptions) { *o = opts })
			err := e.login(context.Background())
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to match %v", err, want)
				}
			}
			if authz.n.Load() != 0 {
				t.Error("the Authorizer was called; no URL may reach the user")
			}
			for _, p := range []string{"/authorize", "/register", "/token"} {
				if n := e.as.Hits(p); n != 0 {
					t.Errorf("%s was requested %d times; the metadata must not be used", p, n)
				}
			}
		})
	}
}

// TestCL23SSRF: every URL another party names is fetched only after the
// address check; these cases never open a connection (the injected dial
// function fails the test if called) and never leave the machine.
func TestCL23SSRF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		answer  []netip.Addr
		run     func(ctx context.Context, c *Client) error
		wantErr error
	}{
		{"CL-23 bad input: resource_metadata at the cloud metadata address", nil, func(ctx context.Context, c *Client) error {
			_, err := c.discover(ctx, "https://mcp.example.com/mcp", "https://169.254.169.254/latest/meta-data/", true)
			return err
		}, errBlockedAddress},
		{"CL-23 bad input: plain http to the cloud metadata address", nil, func(ctx context.Context, c *Client) error {
			_, err := c.discover(ctx, "https://mcp.example.com/mcp", "http://169.254.169.254/latest/meta-data/", true)
			return err
		}, errUnsafeURL},
		{"CL-23 bad input: resource_metadata name resolving to 10.0.0.5", oauthtest.Addrs("10.0.0.5"), func(ctx context.Context, c *Client) error {
			_, err := c.discover(ctx, "https://mcp.example.com/mcp", "https://internal.example/prm", true)
			return err
		}, errBlockedAddress},
		{"CL-23 well-known probe of a resource resolving to 127.0.0.1", oauthtest.Addrs("127.0.0.1"), func(ctx context.Context, c *Client) error {
			_, err := c.discover(ctx, "https://mcp.example.com/mcp", "", true)
			return err
		}, errBlockedAddress},
		{"CL-23 authorization server metadata resolving to 169.254.169.254", oauthtest.Addrs("169.254.169.254"), func(ctx context.Context, c *Client) error {
			_, _, _, err := c.fetchAuthServerMetadata(ctx, "https://as.example.com", false)
			return err
		}, errBlockedAddress},
		{"CL-23 IPv4-mapped private address", oauthtest.Addrs("::ffff:10.0.0.5"), func(ctx context.Context, c *Client) error {
			_, _, _, err := c.fetchAuthServerMetadata(ctx, "https://as.example.com/tenant", false)
			return err
		}, errBlockedAddress},
		{"CL-23 registration endpoint resolving to 192.168.1.1", oauthtest.Addrs("192.168.1.1"), func(ctx context.Context, c *Client) error {
			_, err := c.register(ctx, &oauthmeta.AuthServerMetadata{Issuer: "https://as.example.com", RegistrationEndpoint: "https://as.example.com/register"}, "http://127.0.0.1/cb")
			return err
		}, errBlockedAddress},
		{"CL-23 token endpoint resolving to fd00::1", oauthtest.Addrs("fd00::1"), func(ctx context.Context, c *Client) error {
			d := &tokenstore.Discovery{Issuer: "https://as.example.com", ResourceIndicator: "https://mcp.example.com/mcp",
				AuthServer: &oauthmeta.AuthServerMetadata{Issuer: "https://as.example.com", TokenEndpoint: "https://as.example.com/token"}}
			_, err := c.refreshToken(ctx, d, &tokenstore.Registration{ClientID: "c"}, &tokenstore.Token{Token: oauth2.Token{RefreshToken: "r"}})
			return err
		}, errBlockedAddress},
		{"CL-23 authorization redirect hop to a private address", oauthtest.Addrs("10.1.2.3"), func(ctx context.Context, c *Client) error {
			req := &AuthorizationRequest{c: c, redirectURI: DefaultRedirectURI}
			resp, err := req.HTTPClient().Get("https://login.example.com/authorize")
			if err == nil {
				resp.Body.Close()
			}
			return wrapFetch(ErrDiscovery, "test", unwrapURLError(err))
		}, errBlockedAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{Authorizer: &FollowRedirects{}, netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(tt.answer...), Dial: oauthtest.ForbidDial(t)})})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.run(context.Background(), c)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestMetadataCache: discovery results are reused for their lifetime, so
// a second connection costs no discovery request; max-age and no-store
// are honoured.
func TestMetadataCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	discoveryHits := func(e *env) int {
		n := 0
		for _, p := range append(e.rs.Paths(), e.as.Paths()...) {
			if len(p) > 12 && p[:12] == "/.well-known" {
				n++
			}
		}
		return n
	}
	t.Run("second connection costs no discovery requests", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
		cs, err := e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		before, authz := discoveryHits(e), len(e.as.Authorizations())
		cs, err = e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if err := callTool(ctx, cs, "echo"); err != nil {
			t.Fatal(err)
		}
		if got := discoveryHits(e); got != before {
			t.Errorf("second connection made %d discovery requests", got-before)
		}
		if got := len(e.as.Authorizations()); got != authz {
			t.Errorf("second connection authorized again")
		}
	})
	t.Run("expired token: new authorization on cached metadata", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{ExpiresIn: 60}, oauthtest.ResourceOptions{}, nil)
		if err := e.login(ctx); err != nil {
			t.Fatal(err)
		}
		before := discoveryHits(e)
		e.clock.Advance(2 * time.Minute)
		cs, err := e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		if got := discoveryHits(e); got != before {
			t.Errorf("%d discovery requests; the cached metadata is still fresh", got-before)
		}
		if n := len(e.as.Authorizations()); n != 2 {
			t.Errorf("authorizations = %d, want 2", n)
		}
	})
	t.Run("refused token: discovery bypasses the cache", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
		if err := e.login(ctx); err != nil {
			t.Fatal(err)
		}
		before := discoveryHits(e)
		e.as.RevokeAccessTokens()
		cs, err := e.session(ctx, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		if got := discoveryHits(e); got == before {
			t.Errorf("a refused token must re-run discovery (the resource may have moved)")
		}
	})
	for _, tc := range []struct {
		name          string
		cacheControl  string
		advance       time.Duration
		wantRefetched bool
	}{
		{"default lifetime, within", "", 59 * time.Minute, false},
		{"default lifetime, after", "", 61 * time.Minute, true},
		{"max-age 60, within", "max-age=60", 59 * time.Second, false},
		{"max-age 60, after", "max-age=60", 61 * time.Second, true},
		{"no-store", "no-store", time.Second, true},
		{"max-age capped at 24h", "max-age=999999999", 25 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{MetadataCacheControl: tc.cacheControl}, oauthtest.ResourceOptions{}, nil)
			resource := e.rs.MCPURL()
			if _, err := e.c.discover(ctx, resource, "", false); err != nil {
				t.Fatal(err)
			}
			before := discoveryHits(e)
			e.clock.Advance(tc.advance)
			if _, err := e.c.discover(ctx, resource, "", false); err != nil {
				t.Fatal(err)
			}
			if refetched := discoveryHits(e) > before; refetched != tc.wantRefetched {
				t.Errorf("refetched = %v, want %v", refetched, tc.wantRefetched)
			}
		})
	}
}

// TestLegacy20250326: the 2025-03-26 fallbacks, only when enabled.
func TestLegacy20250326(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name     string
		metadata string
		legacy   bool
		wantErr  error
	}{
		{"off by default: no metadata is an error", "", false, errNoResourceMetadata},
		{"no PRM: the origin is the authorization server", "", true, nil},
		{"no metadata either: default endpoints", "none", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as, rs := oauthtest.NewCombined(t, oauthtest.ASOptions{MetadataAt: tt.metadata}, oauthtest.ResourceOptions{PRMAt: "none"})
			c, err := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, InsecureLegacy20250326: tt.legacy})
			if err != nil {
				t.Fatal(err)
			}
			h, _ := c.OAuthHandler(rs.MCPURL())
			cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), h), "2025-11-25")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer cs.Close()
			if err := callTool(ctx, cs, "echo"); err != nil {
				t.Fatal(err)
			}
			q := as.Authorizations()[0]
			if q.Get("resource") != rs.MCPURL() || q.Get("code_challenge_method") != "S256" {
				t.Errorf("authorization request %v lacks resource or S256", q)
			}
			if tt.metadata == "none" && (as.Hits("/register") != 1 || as.Hits("/token") != 1) {
				t.Errorf("default endpoints not used: %v", as.Paths())
			}
		})
	}
	t.Run("metadata present but unusable never falls back", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{MetadataAt: "none"}, oauthtest.ResourceOptions{}, func(c *Config) { c.InsecureLegacy20250326 = true })
		if err := e.login(ctx); !errors.Is(err, errNoAuthServerMetadata) {
			t.Fatalf("err = %v, want errNoAuthServerMetadata: defaults are for servers without resource metadata only", err)
		}
	})
}

// TestCL05SelectAuthServer: the policy hook sees every listed server; the
// first reachable and valid one is used; state is kept per issuer.
func TestCL05SelectAuthServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("CL-05 first reachable and valid by default", func(t *testing.T) {
		t.Parallel()
		broken := oauthtest.NewAS(t, oauthtest.ASOptions{MetadataAt: "none"})
		good := oauthtest.NewAS(t, oauthtest.ASOptions{})
		rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, broken, good)
		store := tokenstore.NewMemory()
		c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Store: store})
		h, _ := c.OAuthHandler(rs.MCPURL())
		cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), h), "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		if _, err := store.Registration(ctx, good.Issuer()); err != nil {
			t.Errorf("no registration under the usable issuer: %v", err)
		}
		if _, err := store.Registration(ctx, broken.Issuer()); !errors.Is(err, tokenstore.ErrNotFound) {
			t.Errorf("registration stored under the unusable issuer")
		}
	})
	t.Run("CL-05 policy reorders and the state stays per issuer", func(t *testing.T) {
		t.Parallel()
		as1, as2 := oauthtest.NewAS(t, oauthtest.ASOptions{}), oauthtest.NewAS(t, oauthtest.ASOptions{})
		rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as1, as2)
		var seen []string
		store := tokenstore.NewMemory()
		c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Store: store,
			SelectAuthServer: func(_ context.Context, resource string, issuers []string) ([]string, error) {
				seen = issuers
				return []string{issuers[1], issuers[0]}, nil
			}})
		h, _ := c.OAuthHandler(rs.MCPURL())
		cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), h), "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		if !slices.Equal(seen, []string{as1.Issuer(), as2.Issuer()}) {
			t.Errorf("policy saw %q, want all listed servers", seen)
		}
		if as1.TotalHits() != 0 {
			t.Errorf("the server ordered second was contacted")
		}
		reg, err := store.Registration(ctx, as2.Issuer())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Token(ctx, tokenstore.Key{Issuer: as2.Issuer(), Resource: rs.MCPURL(), ClientID: reg.ClientID}); err != nil {
			t.Errorf("token not keyed by the chosen issuer: %v", err)
		}
	})
	t.Run("policy that filters everything", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, func(c *Config) {
			c.SelectAuthServer = func(context.Context, string, []string) ([]string, error) {
				return []string{"https://not-listed.example"}, nil
			}
		})
		if err := e.login(ctx); !errors.Is(err, errNoAuthServer) {
			t.Fatalf("err = %v, want errNoAuthServer", err)
		}
		if e.as.TotalHits() != 0 {
			t.Error("an issuer the resource does not list must never be contacted")
		}
	})
}
