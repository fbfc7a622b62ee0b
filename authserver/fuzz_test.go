package authserver

import (
	"encoding/base64"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// fuzzServer is a server reached without any listener; its CIMD resolver
// is disabled so fuzzing never attempts a fetch.
func fuzzServer(f *testing.F, consent ConsentMode) *Server {
	s, err := New(Config{
		Issuer:                           "https://as.example.com",
		Scopes:                           []string{"mcp:read", "mcp:write"},
		Clients:                          testClients(),
		Consent:                          consent,
		DisableClientIDMetadataDocuments: true,
		RateLimit:                        RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	return s
}

// FuzzAuthorize: whatever the query, the endpoint never fails with 5xx and
// only ever redirects to a redirect URI registered for the named client.
func FuzzAuthorize(f *testing.F) {
	s := fuzzServer(f, ConsentAuto)
	q, _ := authParams(publicID, publicCB)
	f.Add(q.Encode())
	f.Add(strings.Replace(q.Encode(), "127.0.0.1", "127.0.0.1:9", 1))
	f.Add("client_id=web-app&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb%3Ftenant%3D1&response_type=token&state=x")
	f.Add("client_id=public-app&client_id=basic-app")
	f.Add("%zz")
	f.Add("client_id=public-app&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback%23x")
	f.Fuzz(func(t *testing.T, query string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "https://as.example.com/authorize", nil)
		req.URL.RawQuery = query
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q", rec.Code, query)
		}
		loc := rec.Header().Get("Location")
		if loc == "" {
			return
		}
		parsed, _ := url.ParseQuery(query)
		var registered []string
		for _, c := range testClients() {
			if c.ID == parsed.Get("client_id") {
				registered = c.RedirectURIs
			}
		}
		base := loc
		for _, r := range registered {
			if strings.HasPrefix(loc, r) {
				base = r
			}
		}
		if base == loc {
			if i := strings.Index(loc, "?"); i >= 0 {
				base = loc[:i]
			}
		}
		if !matchRedirectURI(registered, base) {
			t.Fatalf("redirected to %q, not registered for %q", loc, parsed.Get("client_id"))
		}
		if u, err := url.Parse(loc); err == nil && u.Query().Has("code") {
			if parsed.Get("response_type") != "code" || !pkce.ValidChallenge(parsed.Get("code_challenge")) {
				t.Fatalf("code issued for %q", query)
			}
		}
	})
}

// FuzzTokenRequest: no form body or Basic header makes the token endpoint
// fail with 5xx, issue a token, or answer something that is not an OAuth
// error.
func FuzzTokenRequest(f *testing.F) {
	s := fuzzServer(f, ConsentAuto)
	f.Add("grant_type=authorization_code&code=x&code_verifier="+pkce.GenerateVerifier()+"&client_id=public-app", "")
	f.Add("grant_type=refresh_token&refresh_token=x&client_id=post-app&client_secret=x", "")
	f.Add("grant_type=authorization_code", "Basic "+base64.StdEncoding.EncodeToString([]byte("basic-app:x")))
	f.Add("grant_type=authorization_code", "Basic !!!")
	f.Add("client_assertion=x&client_id=a", "")
	f.Add("%", "")
	f.Fuzz(func(t *testing.T, body, authz string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "https://as.example.com/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if authz != "" {
			req.Header["Authorization"] = []string{authz}
		}
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		if _, err := oauthmeta.ParseError(rec.Body.Bytes()); err != nil {
			t.Fatalf("not an OAuth error: %s", rec.Body.Bytes())
		}
	})
}

// FuzzRegister: no registration body makes the endpoint fail with 5xx; an
// accepted one never gets a URL-shaped client_id (AS-17) and only
// acceptable redirect URIs.
func FuzzRegister(f *testing.F) {
	s := fuzzServer(f, ConsentAuto)
	f.Add(`{"redirect_uris":["http://127.0.0.1:1/cb"],"token_endpoint_auth_method":"none"}`)
	f.Add(`{"redirect_uris":["https://a.example.com/cb"],"application_type":"web","scope":"mcp:read"}`)
	f.Add(`{"redirect_uris":[1]}`)
	f.Add(`{"client_id":"https://evil/x","redirect_uris":["https://a.example.com/cb"]}`)
	f.Add(`{"jwks":{"keys":[]},"redirect_uris":["https://a.example.com/cb"]}`)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "https://as.example.com/register", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusCreated:
			info, err := oauthmeta.ParseClientInformation(rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if clientmeta.IsURLClientID(info.ClientID) {
				t.Fatalf("AS-17: client_id %q", info.ClientID)
			}
			for _, r := range info.RedirectURIs {
				if clientmeta.CheckRedirectURI(r) != nil {
					t.Fatalf("accepted redirect URI %q", r)
				}
			}
		case http.StatusBadRequest:
			if _, err := oauthmeta.ParseError(rec.Body.Bytes()); err != nil {
				t.Fatalf("not an OAuth error: %s", rec.Body.Bytes())
			}
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}

// FuzzIntrospect: no token string is ever active on a server that issued
// nothing, and the answer is exactly {"active":false}.
func FuzzIntrospect(f *testing.F) {
	s := fuzzServer(f, ConsentAuto)
	f.Add("garbage")
	f.Add("eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCJ9.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUuY29tIn0.c2ln")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, token string) {
		rec := httptest.NewRecorder()
		form := url.Values{"token": {token}}
		req := httptest.NewRequest(http.MethodPost, "https://as.example.com/introspect", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(basicID, basicSecret)
		s.ServeHTTP(rec, req)
		if token == "" {
			return
		}
		if rec.Code != http.StatusOK || rec.Body.String() != `{"active":false}` {
			t.Fatalf("status %d %s", rec.Code, rec.Body.String())
		}
	})
}

// FuzzMatchRedirectURI: a match is either the identical string or the
// loopback-port exemption; never anything looser.
func FuzzMatchRedirectURI(f *testing.F) {
	f.Add("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb")
	f.Add("http://localhost:3000/cb", "http://127.0.0.1:3000/cb")
	f.Add("https://a.example.com/cb", "https://a.example.com/cb?x")
	f.Add("http://[::1]/cb", "http://[::1]:1/cb")
	f.Fuzz(func(t *testing.T, registered, requested string) {
		if !matchRedirectURI([]string{registered}, requested) || registered == requested {
			return
		}
		reg, ok1 := parseLoopbackRedirect(registered)
		req, ok2 := parseLoopbackRedirect(requested)
		if !ok1 || !ok2 || reg.Hostname() != req.Hostname() || reg.EscapedPath() != req.EscapedPath() || reg.RawQuery != req.RawQuery {
			t.Fatalf("%q matched %q", requested, registered)
		}
	})
}

// FuzzParseBasic: Basic credentials never panic the parser, and a decoded
// client_id is never empty.
func FuzzParseBasic(f *testing.F) {
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte("a%3Ab:c")))
	f.Add("Basic " + base64.StdEncoding.EncodeToString([]byte(":x")))
	f.Add("basic ====")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, header string) {
		if id, _, ok := parseBasic(header); ok && id == "" {
			t.Fatal("empty client_id accepted")
		}
	})
}

// FuzzIsIDJAG feeds arbitrary assertions to the header peek that picks
// the JWT-bearer verifier: never a panic.
func FuzzIsIDJAG(f *testing.F) {
	f.Add("eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.e30.")
	f.Add("eyJ0eXAiOjF9.e30.")
	f.Add("...")
	f.Fuzz(func(t *testing.T, jwt string) { _ = isIDJAG(jwt) })
}

// FuzzParseGrantPolicy feeds arbitrary grant-policy files to the parser:
// nothing may panic, and a policy it accepts grants only scopes it names.
func FuzzParseGrantPolicy(f *testing.F) {
	if b, err := os.ReadFile("testdata/grant-policy.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"default":["mcp:read"],"users":{"a@example.com":["mcp:write"]}}`))
	f.Add([]byte(`{"default":["x"],"default":["y"]}`))
	f.Add([]byte(`{"groups":{"Admins":["mcp:admin"],"admins":["mcp:admin"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseGrantPolicy(data)
		if err != nil {
			return
		}
		if p == nil {
			t.Fatal("nil policy without an error")
		}
	})
}
