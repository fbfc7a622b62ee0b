package authserver

import (
	"context"
	"errors"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	cimdGood     = "https://client.example.com/good.json"
	cimdOther    = "https://client.example.com/other.json"
	cimdMismatch = "https://client.example.com/mismatch.json"
	cimdSecret   = "https://client.example.com/secret.json"
	cimdJWT      = "https://client.example.com/jwt.json"
	cimdMissing  = "https://client.example.com/missing.json"
	cimdRedirect = "https://client.example.com/redirect.json"
	cimdCB       = "http://127.0.0.1:3000/callback"
)

func cimdDoc(id, extra string) string {
	return `{"client_id":"` + id + `","client_name":"Metadata Client","redirect_uris":["` + cimdCB + `"],` +
		`"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"` + extra + `}`
}

// cimdHost serves metadata documents over TLS on 127.0.0.1, posing as
// client.example.com.
type cimdHost struct {
	srv     *httptest.Server
	fetches atomic.Int32
	dials   atomic.Int32
}

func newCIMDHost(t *testing.T) *cimdHost { return newCIMDHostWith(t, nil) }

// newCIMDHostWith also serves extra (path → JSON body).
func newCIMDHostWith(t *testing.T, extra map[string]string) *cimdHost {
	t.Helper()
	c := &cimdHost{}
	docs := map[string]string{
		"/good.json":     cimdDoc(cimdGood, ""),
		"/other.json":    cimdDoc(cimdOther, ""),
		"/mismatch.json": cimdDoc(cimdMismatch+"/", ""),
		"/secret.json":   cimdDoc(cimdSecret, `,"client_secret":"hunter2"`),
		"/jwt.json":      strings.Replace(cimdDoc(cimdJWT, `,"jwks_uri":"https://client.example.com/jwks"`), `"none"`, `"private_key_jwt"`, 1),
	}
	maps.Copy(docs, extra)
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.fetches.Add(1)
		if r.URL.Path == "/redirect.json" {
			http.Redirect(w, r, "/good.json", http.StatusFound)
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60")
		_, _ = io.WriteString(w, doc)
	}))
	c.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	c.srv.StartTLS()
	t.Cleanup(c.srv.Close)
	return c
}

// resolver returns a resolver that reaches this host, with cfg's policy.
func (c *cimdHost) resolver(t *testing.T, policy clientmeta.TrustPolicy) *clientmeta.Resolver {
	t.Helper()
	r, err := clientmeta.NewResolver(*nethook.Set(&clientmeta.ResolverConfig{
		TrustPolicy: policy,
		TLSConfig:   c.srv.Client().Transport.(*http.Transport).TLSClientConfig,
	}, nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr), Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		c.dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, c.srv.Listener.Addr().String())
	}}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCIMDFlow covers requirements AS-15 and CIMD-09: a URL client_id runs
// the whole flow as a public client, and its codes and refresh tokens are
// bound to it.
func TestCIMDFlow(t *testing.T) {
	t.Parallel()
	host := newCIMDHost(t)
	h := newHarness(t, "", func(c *Config) { c.ClientMetadata = host.resolver(t, nil) })
	if !h.as.Metadata().ClientIDMetadataDocumentSupported {
		t.Fatal("AS-15: not advertised")
	}
	q, v := authParams(cimdGood, cimdCB)
	code := h.code(q, v)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {v}, "redirect_uri": {cimdCB}}

	other := url.Values{"client_id": {cimdOther}}
	for k, val := range form {
		other[k] = val
	}
	wantError(t, h.token(other, "", ""), 400, oauthmeta.CodeInvalidGrant) // CIMD-09
	form.Set("client_id", cimdGood)
	res := h.token(form, "", "")
	if res.status != http.StatusOK || res.tok.RefreshToken == "" {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["client_id"] != cimdGood {
		t.Fatalf("client_id claim %v", claims["client_id"])
	}
	// CIMD-09: a refresh token issued to one URL client cannot be used by another.
	wantError(t, h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {cimdOther}}, "", ""),
		400, oauthmeta.CodeInvalidGrant)
	r2 := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {res.tok.RefreshToken}, "client_id": {cimdGood}}, "", "")
	if r2.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r2.status, r2.body)
	}
	// URL clients cannot authenticate with a secret.
	wantError(t, h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r2.tok.RefreshToken}, "client_id": {cimdGood}, "client_secret": {"x"}}, "", ""),
		401, oauthmeta.CodeInvalidClient)
	// CIMD-06: two authorizations and three token requests for cimdGood,
	// one fetch of its document (the other fetch is cimdOther's, resolved
	// at the token endpoint to learn its authentication method).
	q2, v2 := authParams(cimdGood, cimdCB)
	h.code(q2, v2)
	if n := host.fetches.Load(); n != 2 {
		t.Fatalf("CIMD-06: %d fetches, want 2 (one per document, cached by max-age)", n)
	}
}

// TestCIMDRefused covers requirements CIMD-02, CIMD-03, CIMD-04, CIMD-07 and
// CIMD-08 at the authorization endpoint: every unusable document ends on an
// error page, never a redirect.
func TestCIMDRefused(t *testing.T) {
	t.Parallel()
	host := newCIMDHost(t)
	h := newHarness(t, "", func(c *Config) { c.ClientMetadata = host.resolver(t, nil) })
	tests := []struct {
		name, clientID, redirect string
	}{
		{"CIMD-07 404 document", cimdMissing, cimdCB},
		{"CIMD-04 CIMD-07 redirected document", cimdRedirect, cimdCB},
		{"CIMD-02 client_id not identical to URL", cimdMismatch, cimdCB},
		{"CIMD-03 document with a secret", cimdSecret, cimdCB},
		{"CIMD-08 localhost instead of 127.0.0.1", cimdGood, "http://localhost:3000/callback"},
		{"CIMD-08 unregistered redirect", cimdGood, "https://evil.example.com/cb"},
		{"CIMD-01 client_id without path", "https://client.example.com", cimdCB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, _ := authParams(tt.clientID, tt.redirect)
			resp := h.authorize(q)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q: want an error page", resp.StatusCode, resp.Header.Get("Location"))
			}
			if strings.Contains(string(body), "hunter2") {
				t.Fatal("error page leaks document content")
			}
		})
	}
}

// TestCIMDConsentPage covers requirement CIMD-10 (and AS-14): the page shows
// the client_id host, the redirect URI host, a localhost warning, and marks
// the self-asserted name as unverified.
func TestCIMDConsentPage(t *testing.T) {
	t.Parallel()
	host := newCIMDHost(t)
	h := promptHarness(t, func(c *Config) { c.ClientMetadata = host.resolver(t, nil) })
	q, _ := authParams(cimdGood, cimdCB)
	resp, body, _ := newBrowser(t, h).page(q)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, want := range []string{"client.example.com", "127.0.0.1:3000", `id="localhost-warning"`, "not verified", "Metadata Client"} {
		if !strings.Contains(body, want) {
			t.Errorf("CIMD-10: page lacks %q", want)
		}
	}
}

// TestCIMDTrustPolicy covers requirement CIMD-11: the allowlist refuses a
// host before any network I/O.
func TestCIMDTrustPolicy(t *testing.T) {
	t.Parallel()
	host := newCIMDHost(t)
	h := newHarness(t, "", func(c *Config) {
		c.ClientMetadata = host.resolver(t, clientmeta.AllowHosts("trusted.example.com"))
	})
	q, _ := authParams(cimdGood, cimdCB)
	resp := h.authorize(q)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(string(body), "not trusted") {
		t.Fatalf("CIMD-11: status %d: %s", resp.StatusCode, body)
	}
	if host.dials.Load() != 0 || host.fetches.Load() != 0 {
		t.Fatal("CIMD-11: the host was contacted although the policy refused it")
	}
}

// TestCIMDSSRF covers requirement CIMD-05 through the authorization
// endpoint: with the default resolver settings a client_id whose host
// resolves to loopback or link-local is refused with no connection.
func TestCIMDSSRF(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1", "169.254.169.254", "10.1.2.3"} {
		t.Run("CIMD-05 "+addr, func(t *testing.T) {
			t.Parallel()
			r, err := clientmeta.NewResolver(*nethook.Set(&clientmeta.ResolverConfig{}, nethook.Net{Resolver: oauthtest.NewResolver(netip.MustParseAddr(addr)), Dial: func(_ context.Context, network, address string) (net.Conn, error) {
				t.Errorf("dial %s %s attempted", network, address)
				return nil, errors.New("forbidden")
			}}))
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, "", func(c *Config) { c.ClientMetadata = r })
			q, _ := authParams(cimdGood, cimdCB)
			if resp := h.authorize(q); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

// TestCIMDDisabled: with documents turned off a URL client_id is an
// unknown client everywhere.
func TestCIMDDisabled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.DisableClientIDMetadataDocuments = true })
	q, v := authParams(cimdGood, cimdCB)
	if resp := h.authorize(q); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("authorize: %d", resp.StatusCode)
	}
	res := h.token(url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "code_verifier": {v}, "client_id": {cimdGood}}, "", "")
	wantError(t, res, 401, oauthmeta.CodeInvalidClient)
}
