package upstream

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/authserver/pgstore"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// The authorization server these tests log users in to, with the login
// and vault of this package: a harness on a loopback listener with a fixed
// clock, test clients and a non-following HTTP client, and a browser.

// Test clients.
const (
	publicID    = "public-app"
	publicCB    = "http://127.0.0.1/callback"
	basicID     = "basic-app"
	basicSecret = "basic-secret-0123456789"
	webID       = "web-app"
	webCB       = "https://app.example.com/cb?tenant=1"
)

// Endpoints of the server.
const (
	pathConsent = "/consent"
	pathToken   = "/token"
	pathRevoke  = "/revoke"
)

// tokenTypeAccessToken is the RFC 8693 token type of an access token.
const tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// testKEK seals the PostgreSQL store's signing keys.
var testKEK = bytes.Repeat([]byte{7}, 32)

// fakeClock is the shared settable test clock.
type fakeClock = oauthtest.Clock

func newClock() *fakeClock { return oauthtest.NewClock(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)) }

// logBuffer collects the server's logs.
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

// upstreamConfig is a test's login: the provider's [Config] and the
// server's allow-list and grant policy, made into the server's Login,
// Allow and GrantPolicy by newServer.
type upstreamConfig struct {
	Issuer                 string
	OAuth2                 *OAuth2Endpoints
	ClientID, ClientSecret string
	ClientKey              crypto.Signer
	ClientKeyID            string
	Scopes                 []string
	GroupsClaim            string
	MultiTenant            *MultiTenant
	AuthParams             map[string]string
	Fetch                  authserver.KeyFetchConfig // its TLSConfig, InsecureAllowHTTPLoopback and test hook
	Timeout                time.Duration
	Allow                  authserver.AllowList
	GrantPolicy            *authserver.GrantPolicy
}

// tokenVaultConfig is a test's vault: the keys of its [VaultConfig] and
// the server's token exchange.
type tokenVaultConfig struct {
	Keys            [][]byte
	Audience        string
	ResourceServers map[string]string
}

// testConfig is a server's configuration with the test's login and vault.
type testConfig struct {
	authserver.Config
	Upstream   *upstreamConfig
	TokenVault *tokenVaultConfig
}

// newServer makes the provider of c.Upstream, closed at the test's end,
// and the server of c.
func newServer(t testing.TB, c testConfig) (*authserver.Server, Provider, error) {
	var p Provider
	cfg := c.Config
	if u := c.Upstream; u != nil {
		var err error
		pc := Config{
			Issuer: u.Issuer, OAuth2: u.OAuth2, ClientID: u.ClientID, ClientSecret: u.ClientSecret,
			ClientKey: u.ClientKey, ClientKeyID: u.ClientKeyID, Scopes: u.Scopes, GroupsClaim: u.GroupsClaim,
			MultiTenant: u.MultiTenant, AuthParams: u.AuthParams, TLSConfig: u.Fetch.TLSConfig, InsecureAllowHTTPLoopback: u.Fetch.InsecureAllowHTTPLoopback,
			Timeout: u.Timeout, Now: cfg.Now,
		}
		nethook.Set(&pc, nethook.Of(&u.Fetch))
		p, err = New(pc)
		if err != nil {
			return nil, nil, err
		}
		t.Cleanup(func() { _ = p.Close() })
		cfg.Login, cfg.Allow, cfg.GrantPolicy = p, u.Allow, u.GrantPolicy
	}
	if v := c.TokenVault; v != nil {
		if p == nil {
			cfg.Vault = VaultConfig{Keys: v.Keys}.Open // no provider: refused
		} else {
			cfg.Vault = VaultConfig{Keys: v.Keys, Provider: p, Logger: cfg.Logger, Now: cfg.Now}.Open
		}
		cfg.VaultAudience, cfg.VaultResourceServers = v.Audience, v.ResourceServers
	}
	as, err := authserver.New(cfg)
	return as, p, err
}

// harness is an authorization server on a loopback listener.
type harness struct {
	t      testing.TB
	srv    *httptest.Server
	as     *authserver.Server
	login  Provider // nil without Upstream
	store  authserver.Storage
	clock  *fakeClock
	issuer string
	http   *http.Client
	logs   *logBuffer
}

func testClients() []authserver.Client {
	return []authserver.Client{
		{ID: publicID, Name: "Public App", RedirectURIs: []string{publicCB}},
		{ID: basicID, Name: "Basic App", Secret: basicSecret, RedirectURIs: []string{publicCB}},
		{ID: webID, Name: "Web App", RedirectURIs: []string{webCB, "https://app.example.com/other"}},
	}
}

// newHarness starts a server; path is appended to the issuer origin. Its
// stores are in memory unless mutate sets them.
func newHarness(t testing.TB, path string, mutate func(*testConfig)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newClock(), logs: &logBuffer{}}
	h.srv = httptest.NewUnstartedServer(nil)
	h.issuer = "http://" + h.srv.Listener.Addr().String() + path
	cfg := h.config()
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Storage = withMemory(cfg.Storage)
	h.store = cfg.Storage
	as, p, err := newServer(t, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.as, h.login = as, p
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

// withMemory fills the stores st leaves nil with one memory store.
func withMemory(st authserver.Storage) authserver.Storage {
	m := authserver.NewMemoryStore().Storage()
	return authserver.Storage{
		Clients: cmp.Or(st.Clients, m.Clients), Codes: cmp.Or(st.Codes, m.Codes), Grants: cmp.Or(st.Grants, m.Grants),
		RefreshTokens: cmp.Or(st.RefreshTokens, m.RefreshTokens), Consents: cmp.Or(st.Consents, m.Consents),
		Keys: cmp.Or(st.Keys, m.Keys), Revocations: cmp.Or(st.Revocations, m.Revocations),
		Pending: cmp.Or(st.Pending, m.Pending), UpstreamTokens: cmp.Or(st.UpstreamTokens, m.UpstreamTokens),
	}
}

func (h *harness) url(p string) string { return h.issuer + p }

// ownTransport is a transport of the test's own, closed at its end: tests
// run in parallel must not share http.DefaultTransport.
func ownTransport(t testing.TB) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// config is the harness's server configuration: its issuer, clock and
// log, the test clients, automatic consent and no rate limit.
func (h *harness) config() testConfig {
	return testConfig{Config: authserver.Config{
		Issuer:                    h.issuer,
		InsecureAllowHTTPLoopback: true,
		Consent:                   authserver.ConsentAuto,
		Scopes:                    []string{"mcp:read", "mcp:write", "mcp:admin"},
		Clients:                   testClients(),
		DPoP:                      &authserver.DPoPConfig{},
		RateLimit:                 authserver.RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)},
		Logger:                    slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:                       h.clock.Now,
	}}
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

// tokenHeader is token with extra request headers.
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

var hiddenField = regexp.MustCompile(`name="(request|csrf_token)" value="([^"]*)"`)

// browser is an HTTP client with a cookie jar that does not follow
// redirects, standing in for a user's browser.
type browser struct {
	t      *testing.T
	h      *harness
	client *http.Client
}

func newBrowser(t *testing.T, h *harness) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, h: h, client: &http.Client{
		Jar: jar, Transport: ownTransport(t), Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page loads the consent page and returns the response, the body and the
// form fields.
func (b *browser) page(q url.Values) (*http.Response, string, url.Values) {
	b.t.Helper()
	resp, err := b.client.Get(b.h.url("/authorize?" + q.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	return resp, string(body), form
}

// submit posts the consent form like a browser on the server's own page.
func (b *browser) submit(form url.Values, headers map[string]string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.h.url(pathConsent), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(b.h.issuer)
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// navigate loads /authorize?q in b as a navigation with the fetch
// metadata headers hdr.
func (b *browser) navigate(q url.Values, hdr map[string]string) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.h.url("/authorize?"+q.Encode()), nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// fetchSite is the fetch metadata of a top-level navigation from site.
func fetchSite(site string) map[string]string {
	return map[string]string{"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
}

// replicaHeader pins a request to one replica behind the test front end;
// without it the front end goes round-robin.
const replicaHeader = "X-Test-Replica"

// replicas is a harness whose issuer is a round-robin front end over n
// servers sharing one store and one clock.
type replicas struct {
	*harness
	servers []*authserver.Server
	hits    []atomic.Int64
	next    atomic.Uint64
}

// newReplicasWith starts n servers, each on the Storage that storage
// returns when called for it.
func newReplicasWith(t *testing.T, n int, storage func() authserver.Storage, mutate func(*testConfig)) *replicas {
	t.Helper()
	r := &replicas{harness: &harness{t: t, clock: newClock(), logs: &logBuffer{}}, hits: make([]atomic.Int64, n)}
	h := r.harness
	h.srv = httptest.NewUnstartedServer(nil)
	h.issuer = "http://" + h.srv.Listener.Addr().String()
	for range n {
		cfg := h.config()
		cfg.Storage = storage()
		if mutate != nil {
			mutate(&cfg)
		}
		as, _, err := newServer(t, cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = as.Close() })
		r.servers = append(r.servers, as)
		h.store = cfg.Storage
	}
	h.as = r.servers[0]
	h.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := int(r.next.Add(1)-1) % n
		if v := req.Header.Get(replicaHeader); v != "" {
			i, _ = strconv.Atoi(v)
		}
		r.hits[i].Add(1)
		rec := httptest.NewRecorder()
		r.servers[i].ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Errorf("replica %d answered %s %s with 500: %s", i, req.Method, req.URL.Path, rec.Body)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	h.http = &http.Client{
		Transport:     ownTransport(t),
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return r
}

// at returns headers that pin a request to replica i.
func at(i int) http.Header { return http.Header{replicaHeader: {strconv.Itoa(i)}} }

// openTestPostgres opens a PostgreSQL store on a new database of pg (or
// on dbURL), closed at the test's end.
func openTestPostgres(t testing.TB, pg *testdb.Postgres, dbURL string) *pgstore.Store {
	t.Helper()
	if dbURL == "" {
		dbURL = pg.NewDatabase(t)
	}
	st, err := pgstore.Open(context.Background(), dbURL, pgstore.Config{KeyEncryptionKey: testKEK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// openTestBolt opens a bbolt store in the test's directory.
func openTestBolt(t testing.TB) *boltstore.Store {
	t.Helper()
	return openTestBoltAt(t, filepath.Join(t.TempDir(), "s.db"))
}

// openTestBoltAt opens the bbolt store in the file at path.
func openTestBoltAt(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	b, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Values of the server that the tests check.
const (
	// loginTTL is how long a login's state stays redeemable.
	loginTTL = 10 * time.Minute
	// upstreamCookie is the login's browser binding cookie on plain http.
	upstreamCookie = "mcpauth-upstream"
	// tokenTypeIDToken is the RFC 8693 token type of an ID token.
	tokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
)

// The downstream APIs of the token exchange tests.
const (
	calendarAPI = "https://calendar.example.com/api"
	mailAPI     = "https://mail.example.com/api"
	mailRSID    = "mail-rs"
	mailRS      = "https://mail-mcp.example.com/mcp"
)

// jwks fetches the published key set.
func (h *harness) jwks() jose.JSONWebKeySet {
	h.t.Helper()
	resp := h.get(h.url("/jwks.json"))
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

// revoke revokes token and returns the status.
func (h *harness) revoke(t *testing.T, token string, form url.Values, user, pass string) int {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("token", token)
	if user == "" && !form.Has("client_id") {
		form.Set("client_id", publicID)
	}
	resp, body := h.post(pathRevoke, form, user, pass)
	if resp.StatusCode == http.StatusOK && len(body) != 0 {
		t.Fatalf("revocation body %q", body)
	}
	return resp.StatusCode
}

func refreshForm(rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}
}

// consentShown fails t unless resp is the consent page.
func consentShown(t *testing.T, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Location") != "" || !strings.Contains(string(body), `name="csrf_token"`) {
		t.Fatalf("status %d, Location %q; want the consent page", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// consentSkipped fails t unless resp redirects a code to the client.
func consentSkipped(t *testing.T, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusFound || !location(t, resp).Query().Has("code") {
		t.Fatalf("status %d; want a code without the consent page", resp.StatusCode)
	}
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// storeKinds returns each store implementation, empty.
func storeKinds(t *testing.T) map[string]func(t *testing.T) authserver.Storage {
	var pgOnce sync.Once
	var pg *testdb.Postgres
	return map[string]func(t *testing.T) authserver.Storage{
		"memory": func(*testing.T) authserver.Storage { return authserver.NewMemoryStore().Storage() },
		"bolt":   func(t *testing.T) authserver.Storage { return openTestBolt(t).Storage() },
		"postgres": func(*testing.T) authserver.Storage {
			pgOnce.Do(func() { pg = testdb.StartPostgres(t) })
			return openTestPostgres(t, pg, "").Storage()
		},
	}
}

// fromPreset is a test's login at the provider of a preset.
func fromPreset(p *Config) *upstreamConfig {
	return &upstreamConfig{Issuer: p.Issuer, OAuth2: p.OAuth2, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		Scopes: p.Scopes, GroupsClaim: p.GroupsClaim, AuthParams: p.AuthParams, MultiTenant: p.MultiTenant}
}

// testResource is the MCP server of the browser test's request.
const testResource = "https://mcp.example.com/mcp"
