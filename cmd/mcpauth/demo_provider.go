package main

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/mcpauth/mcpauth/authserver/upstream"
	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// demoOAuthProvider is the smallest honest OAuth 2.0 provider the demo
// needs, in process on a loopback listener: one user, one confidential
// client with one redirect URI, authorization codes that need PKCE S256,
// are bound to the redirect URI and work once, an RFC 9207 iss on every
// answer to the client, and a user-info endpoint. It approves at once, as
// the demo's authorization server does without --consent consent. The
// demo runs two: the identity provider the authorization server signs
// users in at, and the third-party provider whose account they connect.
type demoOAuthProvider struct {
	issuer, clientID, secret string
	user                     demoProviderUser
	// tokenPrefix starts every access token, so that tests can tell one.
	tokenPrefix string

	mu          sync.Mutex
	redirectURI string
	codes       map[string]demoProviderCode
	tokens      map[string]bool
}

// demoProviderUser is what the user-info endpoint answers.
type demoProviderUser struct {
	ID    string `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

type demoProviderCode struct{ challenge, redirectURI string }

// demoProviderMax bounds the codes and tokens a demo provider keeps.
const demoProviderMax = 1000

// Paths of a demo provider under its issuer.
const (
	demoProviderAuthorize = "/authorize"
	demoProviderToken     = "/token"
	demoProviderUserInfo  = "/user"
)

func newDemoOAuthProvider(issuer, clientID string, user demoProviderUser, tokenPrefix string) *demoOAuthProvider {
	return &demoOAuthProvider{issuer: issuer, clientID: clientID, secret: demoRandom(24), user: user, tokenPrefix: tokenPrefix,
		codes: map[string]demoProviderCode{}, tokens: map[string]bool{}}
}

// demoRandom is n random bytes, base64url.
func demoRandom(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// register sets the one redirect URI of the client.
func (p *demoOAuthProvider) register(redirectURI string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redirectURI = redirectURI
}

// mount serves the provider under path (its issuer's path) on mux.
func (p *demoOAuthProvider) mount(mux *http.ServeMux, path string) {
	mux.HandleFunc("GET "+path+demoProviderAuthorize, p.authorize)
	mux.HandleFunc("POST "+path+demoProviderToken, p.token)
	mux.HandleFunc("GET "+path+demoProviderUserInfo, p.userInfo)
}

// login is the authorization server's side of the provider: a plain
// OAuth 2.0 login at its endpoints.
func (p *demoOAuthProvider) login() (upstream.Provider, error) {
	return upstream.New(upstream.Config{
		Issuer: p.issuer,
		OAuth2: &upstream.OAuth2Endpoints{AuthorizationEndpoint: p.issuer + demoProviderAuthorize,
			TokenEndpoint: p.issuer + demoProviderToken, UserInfoEndpoint: p.issuer + demoProviderUserInfo},
		ClientID: p.clientID, ClientSecret: p.secret, InsecureAllowHTTPLoopback: true,
	})
}

func (p *demoOAuthProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	redirectURI := p.redirectURI
	p.mu.Unlock()
	if q.Get("client_id") != p.clientID || redirectURI == "" || q.Get("redirect_uri") != redirectURI {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest) // never redirect to an unchecked URI
		return
	}
	back, _ := url.Parse(redirectURI)
	v := url.Values{"iss": {p.issuer}}
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	challenge := q.Get("code_challenge")
	switch {
	case q.Get("response_type") != "code":
		v.Set("error", string(oauthmeta.CodeUnsupportedResponseType))
	case q.Get("code_challenge_method") != "S256" || !pkce.ValidChallenge(challenge):
		v.Set("error", string(oauthmeta.CodeInvalidRequest))
		v.Set("error_description", "PKCE S256 is required")
	default:
		code := demoRandom(24)
		p.mu.Lock()
		if len(p.codes) >= demoProviderMax {
			clear(p.codes)
		}
		p.codes[code] = demoProviderCode{challenge: challenge, redirectURI: redirectURI}
		p.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *demoOAuthProvider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != p.clientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.secret)) != 1 {
		demoProviderError(w, http.StatusUnauthorized, oauthmeta.CodeInvalidClient)
		return
	}
	form, err := httpform.Post(w, r, 16<<10)
	if err != nil {
		demoProviderError(w, http.StatusBadRequest, oauthmeta.CodeInvalidRequest)
		return
	}
	if form.Get("grant_type") != oauthmeta.GrantTypeAuthorizationCode {
		demoProviderError(w, http.StatusBadRequest, oauthmeta.CodeUnsupportedGrantType)
		return
	}
	p.mu.Lock()
	c, found := p.codes[form.Get("code")]
	delete(p.codes, form.Get("code"))
	p.mu.Unlock()
	if !found || form.Get("redirect_uri") != c.redirectURI || !pkce.Verify(form.Get("code_verifier"), c.challenge) {
		demoProviderError(w, http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
		return
	}
	tok := p.tokenPrefix + demoRandom(32)
	p.mu.Lock()
	if len(p.tokens) >= demoProviderMax {
		clear(p.tokens)
	}
	p.tokens[tok] = true
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

func (p *demoOAuthProvider) userInfo(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	known := ok && p.tokens[tok]
	p.mu.Unlock()
	if !known {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p.user)
}

func demoProviderError(w http.ResponseWriter, status int, code oauthmeta.ErrorCode) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": string(code)})
}
