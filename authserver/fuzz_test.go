package authserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/keyset"
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

// FuzzUpstreamIDToken feeds arbitrary ID tokens to the upstream verifier,
// whose key source is a fixed set that never fetches. Nothing may panic,
// and only the token signed by the provider's key with the expected claims
// and nonce is accepted.
func FuzzUpstreamIDToken(f *testing.F) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := &fakeProvider{t: &testing.T{}, key: key, kid: "k1", issuer: "https://idp.example", now: func() time.Time { return now }}
	valid := p.sign(key, p.defaultClaims(url.Values{"nonce": {"n1"}}))
	f.Add(valid, "n1")
	f.Add(valid, "n2")
	f.Add("eyJhbGciOiJub25lIn0.e30.", "n1")
	f.Add(strings.Repeat("a.", 3), "")
	u := &upstream{
		cfg:  UpstreamConfig{Issuer: p.issuer, ClientID: upstreamClientID, GroupsClaim: "groups"},
		now:  func() time.Time { return now },
		keys: staticKeys{{ID: "k1", Algorithm: "ES256", Public: &key.PublicKey}},
	}
	f.Fuzz(func(t *testing.T, raw, nonce string) {
		id, err := u.verifyIDToken(context.Background(), raw, nonce)
		if err == nil && (raw != valid || nonce != "n1" || id.Subject != "alice-123") {
			t.Fatalf("accepted %q with nonce %q", raw, nonce)
		}
	})
}

// staticKeys is a key source that never fetches.
type staticKeys []jwa.Key

func (k staticKeys) Keys(_ context.Context, kid string) ([]jwa.Key, error) {
	var out []jwa.Key
	for _, key := range k {
		if kid == "" || key.ID == kid {
			out = append(out, key)
		}
	}
	if len(out) == 0 {
		return nil, keyset.ErrUnknownKey
	}
	return out, nil
}

func (staticKeys) Close() error { return nil }

// FuzzUpstreamUserInfo feeds arbitrary user-info answers of a plain OAuth
// 2.0 provider to the parser: nothing may panic, and an accepted answer
// always yields a non-empty identifier of at most 255 bytes that is the
// "id" member's string or integer literal.
func FuzzUpstreamUserInfo(f *testing.F) {
	f.Add([]byte(`{"id":583231,"login":"octocat","email":"o@example.com","groups":["a"]}`))
	f.Add([]byte(`{"id":"abc","email_verified":"true"}`))
	f.Add([]byte(`{"id":1.5}`))
	f.Add([]byte(`{"id":1,"id":2}`))
	f.Add([]byte(`{"id":null}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Add([]byte(`{"id":-0}`))
	u := &upstream{cfg: UpstreamConfig{Issuer: "https://github.com", GroupsClaim: "groups",
		OAuth2: &OAuth2Provider{IDField: "id", NameField: "login", EmailField: "email", EmailVerifiedField: "email_verified"}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		id, err := u.parseUserInfo(body)
		if err != nil {
			if !errors.Is(err, errUserInfo) {
				t.Fatalf("error %v does not wrap errUserInfo", err)
			}
			return
		}
		if id.Subject == "" || len(id.Subject) > maxSubjectLen || id.Issuer != "https://github.com" {
			t.Fatalf("accepted %q as %+v", body, id)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		switch v := m["id"].(type) {
		case string:
			if v != id.Subject {
				t.Fatalf("id %q read as %q", v, id.Subject)
			}
		case float64:
			if strings.ContainsAny(id.Subject, ".eE") {
				t.Fatalf("non-integer id %q accepted", id.Subject)
			}
		default:
			t.Fatalf("id %T accepted", v)
		}
	})
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
