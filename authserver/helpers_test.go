package authserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// Test clients.
const (
	publicID     = "public-app"
	publicCB     = "http://127.0.0.1/callback"
	basicID      = "basic-app"
	basicSecret  = "basic-secret-0123456789"
	postID       = "post-app"
	postSecret   = "post-secret-0123456789"
	webID        = "web-app"
	webCB        = "https://app.example.com/cb?tenant=1"
	localhostID  = "localhost-app"
	localhostCB  = "http://localhost:3000/cb"
	testResource = "https://mcp.example.com/mcp"
)

// fakeClock is the shared settable test clock.
type fakeClock = oauthtest.Clock

func newClock() *fakeClock { return oauthtest.NewClock(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)) }

// logBuffer collects log output, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is an authorization server on a loopback listener with a fixed
// clock, test clients and a non-following HTTP client.
type harness struct {
	t      testing.TB
	srv    *httptest.Server
	as     *Server
	clock  *fakeClock
	issuer string
	http   *http.Client
	logs   *logBuffer
}

func testClients() []Client {
	return []Client{
		{ID: publicID, Name: "Public App", RedirectURIs: []string{publicCB}},
		{ID: basicID, Name: "Basic App", Secret: basicSecret, RedirectURIs: []string{publicCB}},
		{ID: postID, Name: "Post App", Secret: postSecret, AuthMethod: oauthmeta.AuthMethodClientSecretPost, RedirectURIs: []string{publicCB}},
		{ID: webID, Name: "Web App", RedirectURIs: []string{webCB, "https://app.example.com/other"}},
		{ID: localhostID, Name: "Localhost App", RedirectURIs: []string{localhostCB}, GrantTypes: []string{oauthmeta.GrantTypeAuthorizationCode}},
	}
}

// newHarness starts a server; path is appended to the issuer origin.
func newHarness(t testing.TB, path string, mutate func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newClock(), logs: &logBuffer{}}
	h.srv = httptest.NewUnstartedServer(nil)
	h.issuer = "http://" + h.srv.Listener.Addr().String() + path
	cfg := h.config()
	if mutate != nil {
		mutate(&cfg)
	}
	as, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.as = as
	h.srv.Config.Handler = as
	h.srv.Start()
	t.Cleanup(func() {
		h.srv.Close()
		_ = as.Close()
	})
	h.http = &http.Client{
		Transport:     ownTransport(t),
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return h
}

func (h *harness) url(p string) string { return h.issuer + p }

// ownTransport is a transport of the test's own, closed at its end. Tests
// run in parallel must not share http.DefaultTransport: httptest's
// Server.Close closes that transport's idle connections, and a request of
// another test waiting for one of them then fails with "http:
// CloseIdleConnections called".
func ownTransport(t testing.TB) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// config is the harness's server configuration: its issuer, clock and
// log, the test clients, automatic consent and no rate limit.
func (h *harness) config() Config {
	return Config{
		Issuer:                    h.issuer,
		InsecureAllowHTTPLoopback: true,
		Consent:                   ConsentAuto,
		Scopes:                    []string{"mcp:read", "mcp:write", "mcp:admin"},
		Clients:                   testClients(),
		DPoP:                      &DPoPConfig{},
		RateLimit:                 RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)},
		Logger:                    slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:                       h.clock.Now,
	}
}

// authParams returns a valid authorization request for client and
// redirect, with a fresh verifier.
func authParams(client, redirectURI string) (url.Values, string) {
	v := pkce.GenerateVerifier()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {client},
		"state":                 {"st-" + v[:8]},
		"code_challenge":        {pkce.Challenge(v)},
		"code_challenge_method": {"S256"},
	}
	if redirectURI != "" {
		q.Set("redirect_uri", redirectURI)
	}
	return q, v
}

func (h *harness) get(rawURL string) *http.Response {
	h.t.Helper()
	resp, err := h.http.Get(rawURL)
	if err != nil {
		h.t.Fatalf("GET: %v", err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (h *harness) authorize(q url.Values) *http.Response {
	h.t.Helper()
	return h.get(h.url("/authorize?" + q.Encode()))
}

// location parses the Location of a redirect response.
func location(t testing.TB, resp *http.Response) *url.URL {
	t.Helper()
	loc := resp.Header.Get("Location")
	if loc == "" {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("no Location (status %d): %s", resp.StatusCode, body)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// code runs an authorization request that must succeed and returns the
// code and verifier.
func (h *harness) code(q url.Values, verifier string) string {
	h.t.Helper()
	resp := h.authorize(q)
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("authorize: status %d: %s", resp.StatusCode, body)
	}
	loc := location(h.t, resp)
	if e := loc.Query().Get("error"); e != "" {
		h.t.Fatalf("authorize: error %s: %s", e, loc.Query().Get("error_description"))
	}
	return loc.Query().Get("code")
}

// tokenResult is a token endpoint answer.
type tokenResult struct {
	status int
	header http.Header
	body   []byte
	tok    *oauthmeta.TokenResponse
	err    *oauthmeta.Error
}

// post sends a form to an endpoint, with Basic credentials if user != "".
func (h *harness) post(path string, form url.Values, user, pass string) (*http.Response, []byte) {
	h.t.Helper()
	return h.postHeader(path, form, user, pass, nil)
}

// postHeader is post with extra request headers.
func (h *harness) postHeader(path string, form url.Values, user, pass string, extra http.Header) (*http.Response, []byte) {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, h.url(path), strings.NewReader(form.Encode()))
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(user)+":"+url.QueryEscape(pass))))
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func (h *harness) token(form url.Values, user, pass string) tokenResult {
	h.t.Helper()
	return h.tokenHeader(form, user, pass, nil)
}

// tokenHeader is token with extra request headers (a DPoP proof).
func (h *harness) tokenHeader(form url.Values, user, pass string, extra http.Header) tokenResult {
	h.t.Helper()
	resp, body := h.postHeader(pathToken, form, user, pass, extra)
	res := tokenResult{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.StatusCode == http.StatusOK {
		tok, err := oauthmeta.ParseTokenResponse(body)
		if err != nil {
			h.t.Fatalf("token response: %v: %s", err, body)
		}
		res.tok = tok
	} else if e, err := oauthmeta.ParseError(body); err == nil {
		res.err = e
	}
	return res
}

// exchange redeems a code for the public client.
func (h *harness) exchange(code, verifier, redirectURI string, extra url.Values) tokenResult {
	h.t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "client_id": {publicID}}
	if redirectURI != "" {
		form.Set("redirect_uri", redirectURI)
	}
	for k, v := range extra {
		form[k] = v
	}
	return h.token(form, "", "")
}

// tokens runs the whole flow for the public client and returns the tokens.
func (h *harness) tokens(extra url.Values) *oauthmeta.TokenResponse {
	h.t.Helper()
	q, v := authParams(publicID, publicCB)
	for k, vals := range extra {
		q[k] = vals
	}
	res := h.exchange(h.code(q, v), v, publicCB, nil)
	if res.status != http.StatusOK {
		h.t.Fatalf("token: %d %s", res.status, res.body)
	}
	return res.tok
}

// introspect asks about token as the basic client.
func (h *harness) introspect(token string) (map[string]any, []byte) {
	h.t.Helper()
	resp, body := h.post(pathIntrospect, url.Values{"token": {token}}, basicID, basicSecret)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("introspect: %d %s", resp.StatusCode, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		h.t.Fatal(err)
	}
	return m, body
}

// wantError checks an OAuth error answer.
func wantError(t testing.TB, res tokenResult, status int, code oauthmeta.ErrorCode) {
	t.Helper()
	if res.status != status || res.err == nil || res.err.Code != code {
		t.Fatalf("got %d %s, want %d %s", res.status, res.body, status, code)
	}
	if res.header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
		t.Fatalf("error headers: %v", res.header)
	}
}

// jwks fetches the published key set.
func (h *harness) jwks() jose.JSONWebKeySet {
	h.t.Helper()
	resp := h.get(h.url(pathJWKS))
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		h.t.Fatal(err)
	}
	return set
}

// verifyJWT checks a token against the published keys and returns its
// header and claims.
func (h *harness) verifyJWT(raw string) (jose.Header, map[string]any) {
	h.t.Helper()
	jws, err := jose.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA})
	if err != nil {
		h.t.Fatal(err)
	}
	hdr := jws.Signatures[0].Header
	set := h.jwks()
	keys := set.Key(hdr.KeyID)
	if len(keys) != 1 {
		h.t.Fatalf("kid %q published %d times", hdr.KeyID, len(keys))
	}
	payload, err := jws.Verify(keys[0])
	if err != nil {
		h.t.Fatalf("signature: %v", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		h.t.Fatal(err)
	}
	return hdr, claims
}
