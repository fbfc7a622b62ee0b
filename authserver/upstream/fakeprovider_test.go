package upstream

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcpauth/mcpauth/pkce"
)

// The fake OpenID provider of the upstream login tests, in one place: its
// discovery, authorization, token and JWK Set endpoints, and the expiring,
// rotating upstream tokens of the token vault tests.

// fakeProvider is an OpenID provider on loopback whose answers a test can
// bend: it logs in a fixed user without a page (a user who already
// approved this app upstream) and signs ID tokens it builds with claims().
type fakeProvider struct {
	t      *testing.T
	srv    *httptest.Server
	issuer string
	key    *ecdsa.PrivateKey
	kid    string
	now    func() time.Time

	mu          sync.Mutex
	codes       map[string]url.Values // code -> the authorization request
	lastAuth    url.Values            // the last authorization request
	claims      func(req url.Values) map[string]any
	signer      *ecdsa.PrivateKey   // nil: key
	authError   string              // sent instead of a code when set
	down        bool                // every endpoint answers 503
	jwksDown    bool                // the JWK Set answers 503
	jwksFetches int                 // JWK Set requests so far
	hang        chan struct{}       // when not nil, discovery blocks on it
	tokenMode   string              // "down" or "slow" break the token endpoint
	clientKey   *ecdsa.PublicKey    // when set, the client must use private_key_jwt with it
	page        bool                // show a sign-in page whose button continues, as real providers do
	onDiscovery func()              // called on each discovery request when set
	vaultTokens *fakeUpstreamTokens // when set, tokens expire and refresh (vault_test.go)
	// issuerTemplate, when set, shapes the metadata like Entra ID's
	// multi-tenant one (served under /organizations/v2.0 too): this
	// issuer, and no "iss" on the redirect.
	issuerTemplate string
}

const (
	upstreamClientID     = "mcpauth-at-idp"
	upstreamClientSecret = "idp-secret"
)

func newFakeProvider(t *testing.T, now func() time.Time) *fakeProvider {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeProvider{t: t, key: key, kid: "k1", now: now, codes: map[string]url.Values{}}
	p.claims = p.defaultClaims
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("/organizations/v2.0/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("/authorize/continue", p.authorize)
	mux.HandleFunc("/token", p.token)
	mux.HandleFunc("/jwks", p.jwks)
	p.srv = httptest.NewServer(mux)
	p.issuer = p.srv.URL
	t.Cleanup(func() {
		p.mu.Lock()
		if p.hang != nil {
			close(p.hang)
			p.hang = nil
		}
		p.tokenMode = ""
		p.mu.Unlock()
		p.srv.Close()
	})
	return p
}

func (p *fakeProvider) set(f func(p *fakeProvider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *fakeProvider) defaultClaims(req url.Values) map[string]any {
	now := p.now()
	return map[string]any{
		"iss": p.issuer, "sub": "alice-123", "aud": upstreamClientID, "azp": upstreamClientID,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": req.Get("nonce"),
		"email": "alice@example.com", "email_verified": true, "name": "Alice", "groups": []string{"staff"},
	}
}

func (p *fakeProvider) discovery(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down, hang, onDiscovery, template := p.down, p.hang, p.onDiscovery, p.issuerTemplate
	p.mu.Unlock()
	if onDiscovery != nil {
		onDiscovery()
	}
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return
	}
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	m := map[string]any{
		"issuer": p.issuer, "authorization_endpoint": p.issuer + "/authorize",
		"token_endpoint": p.issuer + "/token", "jwks_uri": p.issuer + "/jwks",
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	}
	if template != "" {
		m["issuer"] = template
		delete(m, "authorization_response_iss_parameter_supported")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// authorize logs the user in at once and redirects to the callback.
func (p *fakeProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastAuth = q
	if p.page && r.URL.Path == "/authorize" {
		// The user presses a button on the provider's own page, so the
		// redirect to the callback starts from the provider's site.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><title>Sign in</title><form method="get" action="/authorize/continue">`)
		for k, vs := range q {
			for _, v := range vs {
				_, _ = io.WriteString(w, `<input type="hidden" name="`+html.EscapeString(k)+`" value="`+html.EscapeString(v)+`">`)
			}
		}
		_, _ = io.WriteString(w, `<button id="signin" type="submit">Sign in</button></form>`)
		return
	}
	back := url.Values{"state": {q.Get("state")}, "iss": {p.issuer}}
	if p.issuerTemplate != "" {
		back.Del("iss")
	}
	if p.authError != "" {
		back.Set("error", p.authError)
	} else {
		code := pkce.GenerateVerifier()
		p.codes[code] = q
		back.Set("code", code)
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
}

func (p *fakeProvider) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p.mu.Lock()
	switch p.tokenMode {
	case "down":
		p.mu.Unlock()
		// Some gateways echo the request in their error page.
		http.Error(w, "down; request was "+r.PostForm.Encode(), http.StatusServiceUnavailable)
		return
	case "slow":
		p.mu.Unlock()
		<-r.Context().Done()
		return
	}
	authed := p.clientAuthenticated(r)
	if vt := p.vaultTokens; vt != nil && r.PostForm.Get("grant_type") == "refresh_token" {
		p.mu.Unlock()
		vt.refresh(w, r, authed)
		return
	}
	req, ok := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code"))
	claims, signer, vt := p.claims, cmpKey(p.signer, p.key), p.vaultTokens
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok || !authed ||
		pkce.Challenge(r.PostForm.Get("code_verifier")) != req.Get("code_challenge") ||
		r.PostForm.Get("redirect_uri") != req.Get("redirect_uri") {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
		return
	}
	idt := p.sign(signer, claims(req))
	body := map[string]any{"access_token": "upstream-at", "token_type": "Bearer", "id_token": idt}
	if vt != nil {
		vt.issue(body)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// clientAuthenticated checks client_secret_basic, or private_key_jwt when
// the provider has a client key. Called with p.mu held.
func (p *fakeProvider) clientAuthenticated(r *http.Request) bool {
	if p.clientKey == nil {
		user, pass, _ := r.BasicAuth()
		return user == upstreamClientID && pass == upstreamClientSecret
	}
	if _, _, basic := r.BasicAuth(); basic ||
		r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return false
	}
	tok, err := jwt.ParseSigned(r.PostForm.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return false
	}
	var c jwt.Claims
	if tok.Claims(p.clientKey, &c) != nil || tok.Headers[0].KeyID != "as-key-1" {
		return false
	}
	return c.Issuer == upstreamClientID && c.Subject == upstreamClientID && c.ID != "" &&
		c.Audience.Contains(p.issuer) && c.ValidateWithLeeway(jwt.Expected{Time: p.now()}, 0) == nil
}

func cmpKey(a, b *ecdsa.PrivateKey) *ecdsa.PrivateKey {
	if a != nil {
		return a
	}
	return b
}

func (p *fakeProvider) sign(key *ecdsa.PrivateKey, claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", p.kid)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		p.t.Error(err)
		return ""
	}
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		p.t.Error(err)
	}
	return raw
}

func (p *fakeProvider) jwks(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.jwksFetches++
	down := p.jwksDown
	p.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "ES256", Use: "sig"},
	}})
}

// fakeUpstreamTokens makes the fake provider issue expiring access tokens
// with rotating refresh tokens, and count refreshes.
type fakeUpstreamTokens struct {
	mu          sync.Mutex
	ttl         int64 // expires_in, seconds
	n           int
	live        map[string]bool // refresh tokens not yet used
	refreshes   int
	refusals    int           // refreshes answered invalid_grant
	inFlight    int           // refresh requests being answered
	maxInFlight int           // the most refresh requests answered at once
	hold        time.Duration // how long a refresh request is held before its answer
	refuse      bool          // every refresh gets invalid_grant
	issued      []string      // every token issued, for leak checks
}

func newFakeUpstreamTokens(ttl time.Duration) *fakeUpstreamTokens {
	return &fakeUpstreamTokens{ttl: int64(ttl / time.Second), live: map[string]bool{}}
}

// issue adds fresh tokens to a token response.
func (f *fakeUpstreamTokens) issue(body map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issueLocked(body)
}

func (f *fakeUpstreamTokens) issueLocked(body map[string]any) {
	f.n++
	at, rt := fmt.Sprintf("gh-at-%d-%s", f.n, randomToken(8)), fmt.Sprintf("gh-rt-%d-%s", f.n, randomToken(8))
	f.live[rt] = true
	f.issued = append(f.issued, at, rt)
	body["access_token"], body["refresh_token"], body["expires_in"], body["token_type"] = at, rt, f.ttl, "bearer"
}

// refresh answers grant_type=refresh_token: a refresh token works once,
// as at a provider that rotates refresh tokens strictly. The request is
// held for f.hold first, so that overlapping refreshes overlap here.
func (f *fakeUpstreamTokens) refresh(w http.ResponseWriter, r *http.Request, authed bool) {
	f.mu.Lock()
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	hold := f.hold
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if hold > 0 {
		t := time.NewTimer(hold)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refreshes++
	rt := r.PostForm.Get("refresh_token")
	w.Header().Set("Content-Type", "application/json")
	if !authed || f.refuse || !f.live[rt] {
		f.refusals++
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
		return
	}
	delete(f.live, rt)
	body := map[string]any{}
	f.issueLocked(body)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeUpstreamTokens) state() (issued []string, refreshes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued...), f.refreshes
}
