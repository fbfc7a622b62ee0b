package client

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const testCIMD = "https://app.example.com/oauth/client.json"

// TestCL16RegistrationOrder: pre-registered for this issuer, then CIMD when
// advertised, then DCR, then a clear error.
func TestCL16RegistrationOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		as           oauthtest.ASOptions
		cfg          func(c *Config, issuer string)
		wantErr      error
		wantClientID string // "dcr" for a dynamically registered one
		wantRegister int
	}{
		{"CL-16 pre-registered credentials win over CIMD and DCR",
			oauthtest.ASOptions{CIMD: true, AuthMethods: []string{"client_secret_basic"},
				PreRegistered: []oauthtest.RegisteredClient{{ID: "pre", Secret: "pre-secret", Method: "client_secret_basic"}}},
			func(c *Config, issuer string) {
				c.ClientIDMetadataURL = testCIMD
				c.PreRegistered = []PreRegisteredClient{{Issuer: issuer, ClientID: "pre", ClientSecret: "pre-secret"}}
			}, nil, "pre", 0},
		{"CL-16 CIMD when advertised, even with a registration endpoint", oauthtest.ASOptions{CIMD: true},
			func(c *Config, _ string) { c.ClientIDMetadataURL = testCIMD }, nil, testCIMD, 0},
		{"CL-16 DCR when CIMD is not advertised", oauthtest.ASOptions{},
			func(c *Config, _ string) { c.ClientIDMetadataURL = testCIMD }, nil, "dcr", 1},
		{"CL-16 DCR without a CIMD URL", oauthtest.ASOptions{CIMD: true}, nil, nil, "dcr", 1},
		{"CL-16 no way to register is a clear error", oauthtest.ASOptions{NoRegistration: true}, nil, errNoRegistration, "", 0},
		{"CL-16 DCR disabled", oauthtest.ASOptions{}, func(c *Config, _ string) { c.DisableDynamicRegistration = true }, errNoRegistration, "", 0},
		{"CL-18 pre-registered for another issuer is never offered", oauthtest.ASOptions{NoRegistration: true},
			func(c *Config, _ string) {
				c.PreRegistered = []PreRegisteredClient{{Issuer: "https://old-as.example.com", ClientID: "old", ClientSecret: "old-secret"}}
			}, errIssuerChanged, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.NewAS(t, tt.as)
			rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
			cfg := Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true}
			if tt.cfg != nil {
				tt.cfg(&cfg, as.Issuer())
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Login(context.Background(), rs.MCPURL())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if errors.Is(tt.wantErr, errIssuerChanged) && !errors.Is(err, errNoRegistration) {
				t.Errorf("errIssuerChanged must also match errNoRegistration")
			}
			if got := as.Hits("/register"); got != tt.wantRegister {
				t.Errorf("registrations = %d, want %d", got, tt.wantRegister)
			}
			ids := as.ClientIDs()
			if tt.wantErr != nil {
				if len(ids) != 0 || as.Hits("/authorize") != 0 {
					t.Errorf("client ids %q reached the server; no authorization may start", ids)
				}
				return
			}
			want := tt.wantClientID
			for _, id := range ids {
				if id == "(basic)" {
					continue
				}
				if (want == "dcr" && !strings.HasPrefix(id, "dcr-")) || (want != "dcr" && id != want) {
					t.Errorf("client_id %q used, want %q", id, want)
				}
			}
		})
	}
}

// TestCL17DynamicRegistration: the DCR request carries application_type
// (native for a loopback redirect, web otherwise), the refresh_token grant
// (SEP-2207) and a public-client method when the server allows it.
func TestCL17DynamicRegistration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		redirect    string
		appType     string
		authMethods []string
		wantType    string
		wantMethod  string
	}{
		{"CL-17 native for a loopback redirect", "", "", nil, "native", "none"},
		{"CL-17 web for an https redirect", "https://app.example.com/callback", "", nil, "web", "none"},
		{"CL-17 configured", "", "web", nil, "web", "none"},
		{"secret-based when none is not offered", "", "", []string{"client_secret_post"}, "native", "client_secret_post"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{AuthMethods: tt.authMethods}, oauthtest.ResourceOptions{}, func(c *Config) {
				c.ApplicationType = tt.appType
				c.ClientName = "Test Host"
			})
			d, err := e.c.discover(context.Background(), e.rs.MCPURL(), "", false)
			if err != nil {
				t.Fatal(err)
			}
			redirect := tt.redirect
			if redirect == "" {
				redirect = DefaultRedirectURI
			}
			reg, _, err := e.c.registration(context.Background(), d, redirect)
			if err != nil {
				t.Fatal(err)
			}
			md := e.as.Registrations()[0]
			if md.ApplicationType != tt.wantType {
				t.Errorf("application_type = %q, want %q", md.ApplicationType, tt.wantType)
			}
			if md.TokenEndpointAuthMethod != tt.wantMethod || reg.TokenEndpointAuthMethod != tt.wantMethod {
				t.Errorf("token_endpoint_auth_method = %q/%q, want %q", md.TokenEndpointAuthMethod, reg.TokenEndpointAuthMethod, tt.wantMethod)
			}
			if !slices.Contains(md.GrantTypes, oauthmeta.GrantTypeRefreshToken) {
				t.Errorf("grant_types %q lacks refresh_token (SEP-2207)", md.GrantTypes)
			}
			if reg.Issuer != e.as.Issuer() || reg.Method != tokenstore.MethodDynamic {
				t.Errorf("registration %v not bound to the issuer", reg)
			}
			if tt.name == "CL-17 native for a loopback redirect" {
				golden.JSON(t, "dcr-request.json", md)
			}
		})
	}
}

// TestRegistrationReuse: a registration is stored and reused across logins
// and processes, and replaced only when it cannot serve.
func TestRegistrationReuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("second login reuses the registration", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Logout(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
			t.Fatal(err)
		}
		if n := e.as.Hits("/register"); n != 1 {
			t.Errorf("registered %d times, want once", n)
		}
		if n := e.as.Hits("/authorize"); n != 2 {
			t.Errorf("authorized %d times, want twice", n)
		}
	})
	t.Run("a second process reuses the stored registration and token", func(t *testing.T) {
		t.Parallel()
		as := oauthtest.NewAS(t, oauthtest.ASOptions{})
		rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
		path := filepath.Join(t.TempDir(), "store.json")
		for i := range 2 {
			store, _ := tokenstore.NewFile(path)
			c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Store: store})
			cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), mustHandler(t, c, rs.MCPURL())), "2026-07-28")
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			cs.Close()
		}
		if as.Hits("/register") != 1 || as.Hits("/authorize") != 1 {
			t.Errorf("register %d, authorize %d; want 1 and 1", as.Hits("/register"), as.Hits("/authorize"))
		}
	})
	for _, tc := range []struct {
		name       string
		stored     tokenstore.Registration
		wantReuse  bool
		redirectTo string
	}{
		{"loopback port may differ", tokenstore.Registration{RedirectURIs: []string{"http://127.0.0.1:5555/callback"}}, true, DefaultRedirectURI},
		{"another redirect host re-registers", tokenstore.Registration{RedirectURIs: []string{"https://old.example.com/cb"}}, false, DefaultRedirectURI},
		{"expired secret re-registers", tokenstore.Registration{RedirectURIs: []string{DefaultRedirectURI}, ClientSecret: "s",
			ClientSecretExpiresAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, false, DefaultRedirectURI},
		{"dropped CIMD URL re-registers", tokenstore.Registration{Method: tokenstore.MethodCIMD, ClientID: "https://gone.example.com/c.json"}, false, DefaultRedirectURI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
			d, err := e.c.discover(ctx, e.rs.MCPURL(), "", false)
			if err != nil {
				t.Fatal(err)
			}
			st := tc.stored
			st.Issuer = d.Issuer
			if st.Method == "" {
				st.Method, st.ClientID = tokenstore.MethodDynamic, "stored-client"
			}
			if err := e.store.PutRegistration(ctx, &st); err != nil {
				t.Fatal(err)
			}
			reg, registered, err := e.c.registration(ctx, d, tc.redirectTo)
			if err != nil {
				t.Fatal(err)
			}
			if reused := reg.ClientID == st.ClientID; reused != tc.wantReuse {
				t.Errorf("reused = %v, want %v", reused, tc.wantReuse)
			}
			if registered == tc.wantReuse {
				t.Errorf("registered = %v, with reuse %v", registered, tc.wantReuse)
			}
		})
	}
}

func mustHandler(t *testing.T, c *Client, url string) *OAuthHandler {
	t.Helper()
	h, err := c.OAuthHandler(url)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCL18AuthServerMigration: when the resource moves to another
// authorization server, the client registers there and never presents the
// old server's client_id or secret.
func TestCL18AuthServerMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	as1 := oauthtest.NewAS(t, oauthtest.ASOptions{AuthMethods: []string{"client_secret_basic"}})
	as2 := oauthtest.NewAS(t, oauthtest.ASOptions{AuthMethods: []string{"client_secret_post"}})
	rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as1)
	store := tokenstore.NewMemory()
	c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Store: store})
	cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), mustHandler(t, c, rs.MCPURL())), "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := callTool(ctx, cs, "echo"); err != nil {
		t.Fatal(err)
	}
	reg1, _ := store.Registration(ctx, as1.Issuer())

	rs.SetAuthServers(as2) // the resource now trusts and names only as2
	if err := callTool(ctx, cs, "echo"); err != nil {
		t.Fatalf("after migration: %v", err)
	}
	reg2, err := store.Registration(ctx, as2.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	if as2.Hits("/register") != 1 {
		t.Errorf("CL-18: no registration at the new server")
	}
	for _, id := range as2.ClientIDs() {
		if id == reg1.ClientID {
			t.Errorf("CL-18: the old client_id was presented to the new server")
		}
	}
	for _, tr := range as2.TokenRequests() {
		if strings.Contains(tr.Form.Encode()+tr.Header.Get("Authorization"), reg1.ClientSecret) {
			t.Errorf("CL-18: the old secret was sent to the new server")
		}
	}
	if reg1.ClientID == reg2.ClientID {
		t.Errorf("the two servers share a registration")
	}
	if _, err := store.Registration(ctx, as1.Issuer()); err != nil {
		t.Errorf("the old server's registration must stay bound to it: %v", err)
	}
}

// TestCL18PreRegisteredIssuerChanged: a resource used with pre-registered
// credentials that moves to another authorization server is an error, even
// when the new server offers dynamic registration; nothing reaches it.
func TestCL18PreRegisteredIssuerChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	as1 := oauthtest.NewAS(t, oauthtest.ASOptions{NoRegistration: true, AuthMethods: []string{"client_secret_basic"},
		PreRegistered: []oauthtest.RegisteredClient{{ID: "pre", Secret: "pre-secret", Method: "client_secret_basic"}}})
	as2 := oauthtest.NewAS(t, oauthtest.ASOptions{})
	rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as1)
	c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true,
		PreRegistered: []PreRegisteredClient{{Issuer: as1.Issuer(), ClientID: "pre", ClientSecret: "pre-secret"}}})
	h := mustHandler(t, c, rs.MCPURL())
	cs, err := sdkConnect(ctx, mcpTransport(rs.MCPURL(), h), "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	rs.SetAuthServers(as2)
	if err := callTool(ctx, cs, "echo"); !errors.Is(err, errIssuerChanged) {
		t.Fatalf("err = %v, want errIssuerChanged", err)
	}
	for _, p := range []string{"/register", "/authorize", "/token"} {
		if as2.Hits(p) != 0 {
			t.Errorf("CL-18: the new server got %s", p)
		}
	}
	if err := callTool(ctx, cs, "echo"); !errors.Is(err, errIssuerChanged) {
		t.Errorf("second attempt: err = %v, want errIssuerChanged again", err)
	}
	for _, p := range as2.Paths() {
		if p != "/.well-known/oauth-authorization-server" {
			t.Errorf("the new server got %s; only its metadata may be read", p)
		}
	}
}

// TestCIMD12ConfigValidation: a configured client_id URL, and the document
// when given, are checked against CIMD-01…CIMD-03 before use.
func TestCIMD12ConfigValidation(t *testing.T) {
	t.Parallel()
	doc := func(mut func(*clientmeta.Document)) *clientmeta.Document {
		d := &clientmeta.Document{ClientID: "https://c.example/x.json", ClientMetadata: oauthmeta.ClientMetadata{
			ClientName: "App", RedirectURIs: []string{"http://127.0.0.1/callback"},
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			TokenEndpointAuthMethod: "none"}}
		if mut != nil {
			mut(d)
		}
		return d
	}
	tests := []struct {
		name     string
		url      string
		doc      *clientmeta.Document
		wantErrs []error
	}{
		{"CIMD-12 CIMD-01 http scheme", "http://c.example/x.json", nil, []error{ErrConfig, clientmeta.ErrInvalidClientID}},
		{"CIMD-12 CIMD-01 no path", "https://c.example", nil, []error{ErrConfig, clientmeta.ErrInvalidClientID}},
		{"CIMD-12 CIMD-01 dot segment", "https://c.example/a/../x", nil, []error{clientmeta.ErrInvalidClientID}},
		{"CIMD-12 CIMD-01 fragment", "https://c.example/x#f", nil, []error{clientmeta.ErrInvalidClientID}},
		{"CIMD-12 CIMD-01 user information", "https://u:p@c.example/x", nil, []error{clientmeta.ErrInvalidClientID}},
		{"CIMD-12 CIMD-01 port allowed", "https://c.example:8443/x.json", nil, nil},
		{"CIMD-12 valid document", "https://c.example/x.json", doc(nil), nil},
		{"CIMD-12 CIMD-02 document for another URL", "https://c.example/y.json", doc(nil), []error{ErrConfig, clientmeta.ErrClientIDMismatch}},
		{"CIMD-12 CIMD-02 no client_name", "https://c.example/x.json", doc(func(d *clientmeta.Document) { d.ClientName = "" }), []error{clientmeta.ErrInvalidDocument}},
		{"CIMD-12 CIMD-03 shared secret method", "https://c.example/x.json",
			doc(func(d *clientmeta.Document) { d.TokenEndpointAuthMethod = "client_secret_basic" }), []error{clientmeta.ErrSharedSecret}},
		{"CL-25 private_key_jwt is not implemented", "https://c.example/x.json",
			doc(func(d *clientmeta.Document) {
				d.TokenEndpointAuthMethod = "private_key_jwt"
				d.JWKSURI = "https://c.example/jwks"
			}), []error{ErrConfig}},
		{"document without URL", "", doc(nil), []error{ErrConfig}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Authorizer: &FollowRedirects{}, ClientIDMetadataURL: tt.url, ClientIDMetadata: tt.doc})
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want %v", err, want)
				}
			}
		})
	}
}

// TestCL25NoSecretWithURLClientID: a Client ID Metadata Document client
// never sends a client secret, whatever the server lists.
func TestCL25NoSecretWithURLClientID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.ASOptions{CIMD: true, AuthMethods: []string{"client_secret_basic", "client_secret_post"}},
		oauthtest.ResourceOptions{}, func(c *Config) { c.ClientIDMetadataURL = testCIMD })
	if err := e.c.Login(context.Background(), e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	trs := e.as.TokenRequests()
	if len(trs) != 1 {
		t.Fatalf("token requests = %d", len(trs))
	}
	for _, tr := range trs {
		if tr.Form.Has("client_secret") || tr.Header.Get("Authorization") != "" {
			t.Errorf("CL-25: credentials sent with a URL client_id: %v", tr.Form)
		}
		if tr.Form.Get("client_id") != testCIMD {
			t.Errorf("client_id = %q", tr.Form.Get("client_id"))
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	ok := &FollowRedirects{}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no Authorizer", Config{}},
		{"pre-registered without client_id", Config{Authorizer: ok, PreRegistered: []PreRegisteredClient{{Issuer: "https://as.example.com"}}}},
		{"pre-registered with an http issuer", Config{Authorizer: ok, PreRegistered: []PreRegisteredClient{{Issuer: "http://as.example.com", ClientID: "c"}}}},
		{"two pre-registered clients for one issuer", Config{Authorizer: ok, PreRegistered: []PreRegisteredClient{
			{Issuer: "https://as.example.com", ClientID: "a"}, {Issuer: "https://as.example.com", ClientID: "b"}}}},
		{"pre-registered with client_secret_jwt", Config{Authorizer: ok, PreRegistered: []PreRegisteredClient{
			{Issuer: "https://as.example.com", ClientID: "a", TokenEndpointAuthMethod: "client_secret_jwt"}}}},
		{"unknown application type", Config{Authorizer: ok, ApplicationType: "desktop"}},
		{"negative timeout", Config{Authorizer: ok, Timeout: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
	t.Run("MCP server URLs", func(t *testing.T) {
		t.Parallel()
		c, _ := New(Config{Authorizer: ok})
		for _, u := range []string{"http://mcp.example.com/mcp", "https://mcp.example.com/mcp?x=1", "https://mcp.example.com/mcp#f", "javascript:alert(1)", ""} {
			if _, err := c.Transport(u, nil); err == nil {
				t.Errorf("Transport(%q) accepted", u)
			}
		}
		if _, err := c.OAuthHandler("https://MCP.example.com:443/mcp"); err != nil {
			t.Errorf("canonical variant refused: %v", err)
		}
	})
}

// TestSameRedirect: a stored registration serves a redirect URI that is
// the same string, or (RFC 8252 §7.3) an http loopback IP literal redirect
// that differs only in port; "localhost" and https must match exactly.
// applicationType calls both loopback literals and "localhost" native.
func TestSameRedirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		registered, requested string
		want                  bool
	}{
		{"http://127.0.0.1:3000/cb", "http://127.0.0.1:3000/cb", true},
		{"http://127.0.0.1:3000/cb", "http://127.0.0.1:4000/cb", true},
		{"http://127.0.0.1/cb", "http://127.0.0.1:4000/cb", true},
		{"http://127.5.6.7:3000/cb", "http://127.5.6.7:4000/cb", true},
		{"http://[::1]:3000/cb", "http://[::1]:4000/cb", true},
		{"http://[::ffff:127.0.0.1]:3000/cb", "http://[::ffff:127.0.0.1]:4000/cb", true},
		{"http://localhost:3000/cb", "http://localhost:3000/cb", true},
		{"http://localhost:3000/cb", "http://localhost:4000/cb", false},
		{"http://LOCALHOST:3000/cb", "http://LOCALHOST:4000/cb", false},
		{"http://localhost.:3000/cb", "http://localhost.:4000/cb", false},
		{"http://127.1:3000/cb", "http://127.1:4000/cb", false},
		{"http://[fe80::1%25lo]:3000/cb", "http://[fe80::1%25lo]:4000/cb", false},
		{"https://127.0.0.1:3000/cb", "https://127.0.0.1:4000/cb", false},
		{"http://127.0.0.1:3000/cb", "http://127.0.0.2:3000/cb", false},
		{"http://127.0.0.1:3000/cb", "http://[::1]:3000/cb", false},
		{"http://127.0.0.1:3000/cb", "http://127.0.0.1:4000/other", false},
		{"http://127.0.0.1:3000/cb?a=1", "http://127.0.0.1:4000/cb?a=2", false},
		{"http://10.0.0.1:3000/cb", "http://10.0.0.1:4000/cb", false},
	}
	for _, tt := range tests {
		if got := sameRedirect(tt.registered, tt.requested); got != tt.want {
			t.Errorf("sameRedirect(%q, %q) = %v, want %v", tt.registered, tt.requested, got, tt.want)
		}
	}
	c := &Client{}
	for uri, want := range map[string]string{
		"http://127.0.0.1:3000/cb": "native", "http://[::1]:3000/cb": "native", "http://localhost:3000/cb": "native",
		"http://LOCALHOST:3000/cb": "native", "http://localhost.:3000/cb": "web", "https://app.example.com/cb": "web",
	} {
		if got := c.applicationType(uri); got != want {
			t.Errorf("applicationType(%q) = %q, want %q", uri, got, want)
		}
	}
}
