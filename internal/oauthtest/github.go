package oauthtest

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/pkce"
)

// GitHubUser is a user of the [GitHub] fake.
type GitHubUser struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name,omitempty"`
	// Email is the public email of /user (GitHub sends null when the
	// user keeps it private; the fake then omits it).
	Email string `json:"email,omitempty"`
	// Emails is the answer of /user/emails; nil answers 404.
	Emails []GitHubEmail `json:"-"`
	// Orgs are the logins of the user's organisations, listed by
	// /user/orgs; Teams are the user's teams as "org/team-slug", listed by
	// /user/teams. Both answer page by page ("per_page", default 30, at
	// most 100, and "page"), as GitHub does.
	Orgs, Teams []string `json:"-"`
}

// GitHubEmail is one entry of /user/emails.
type GitHubEmail struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// GitHubFaults bend the fake's answers. The zero value is a healthy GitHub.
type GitHubFaults struct {
	// UserStatus, when set, is the status of every /user answer.
	UserStatus int
	// UserSlow makes /user answer only when the request ends.
	UserSlow bool
	// UserBody, when set, is sent by /user instead of the user.
	UserBody string
	// TokenError makes the token endpoint answer 200 with this "error", as
	// GitHub does for a bad code.
	TokenError string
	// TokenScope, when set, is the token response's "scope" instead of
	// the scopes requested, comma-separated as GitHub sends them.
	TokenScope string
	// MembersStatus, when set, is the status of every /user/orgs and
	// /user/teams answer; MembersSlow makes them answer only when the
	// request ends; MembersBody, when set, is sent instead of each page.
	MembersStatus int
	MembersSlow   bool
	MembersBody   string
}

// GitHub is a fake of GitHub's OAuth app endpoints on 127.0.0.1: the
// authorization endpoint logs in the current user at once (a user who
// already authorized the app), the token endpoint checks the client
// secret (client_secret_post or Basic), the code, its redirect_uri and the
// PKCE S256 verifier, and answers form-encoded unless asked for JSON, as
// GitHub does, granting the scopes asked for; /user, /user/emails,
// /user/orgs and /user/teams need "Authorization: Bearer" with a token it
// issued and a User-Agent. Nothing is stored beyond the test.
type GitHub struct {
	t   testing.TB
	srv *httptest.Server

	// ClientID and ClientSecret are the OAuth app's credentials.
	ClientID, ClientSecret string

	mu       sync.Mutex
	callback string
	user     GitHubUser
	faults   GitHubFaults
	codes    map[string]ghCode
	tokens   map[string]GitHubUser
	bearerAt []string // paths that received a bearer token
}

type ghCode struct {
	redirectURI, challenge, scope string
	user                          GitHubUser
}

// NewGitHub starts the fake with a default user (id 583231, "octocat",
// primary email octocat@example.com, verified). It stops with the test.
func NewGitHub(t testing.TB) *GitHub {
	t.Helper()
	g := &GitHub{t: t, ClientID: "gh-client", ClientSecret: "gh-secret",
		user: GitHubUser{ID: 583231, Login: "octocat", Name: "The Octocat",
			Emails: []GitHubEmail{{Email: "octocat@example.com", Primary: true, Verified: true}}},
		codes: map[string]ghCode{}, tokens: map[string]GitHubUser{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", g.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", g.token)
	mux.HandleFunc("GET /api/user", g.userInfo)
	mux.HandleFunc("GET /api/user/emails", g.emails)
	mux.HandleFunc("GET /api/user/orgs", g.orgs)
	mux.HandleFunc("GET /api/user/teams", g.teams)
	g.srv = httptest.NewServer(mux)
	t.Cleanup(g.srv.Close)
	return g
}

// AuthorizationURL, TokenURL, UserURL and EmailsURL are the fake's
// endpoints, standing in for github.com and api.github.com.
func (g *GitHub) AuthorizationURL() string { return g.srv.URL + "/login/oauth/authorize" }
func (g *GitHub) TokenURL() string         { return g.srv.URL + "/login/oauth/access_token" }
func (g *GitHub) UserURL() string          { return g.srv.URL + "/api/user" }
func (g *GitHub) EmailsURL() string        { return g.srv.URL + "/api/user/emails" }

// Register sets the OAuth app's one callback URL.
func (g *GitHub) Register(callback string) { setLocked(&g.mu, &g.callback, callback) }

// SetUser makes u the user the next logins authenticate.
func (g *GitHub) SetUser(u GitHubUser) { setLocked(&g.mu, &g.user, u) }

// SetFaults replaces the faults.
func (g *GitHub) SetFaults(f GitHubFaults) { setLocked(&g.mu, &g.faults, f) }

// BearerPaths returns the paths of the requests, to any endpoint of the
// fake, that carried a bearer token so far.
func (g *GitHub) BearerPaths() []string { return cloneLocked(&g.mu, &g.bearerAt) }

func (g *GitHub) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteBearer(r)
	if q.Get("client_id") != g.ClientID || g.callback == "" || q.Get("redirect_uri") != g.callback {
		http.Error(w, "The redirect_uri is not associated with this application.", http.StatusBadRequest)
		return
	}
	back := url.Values{"state": {q.Get("state")}}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		back.Set("error", "invalid_request")
	} else {
		code := pkce.GenerateVerifier()
		g.codes[code] = ghCode{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
			scope: strings.Join(strings.Fields(q.Get("scope")), ","), user: g.user}
		back.Set("code", code)
	}
	http.Redirect(w, r, g.callback+"?"+back.Encode(), http.StatusFound)
}

func (g *GitHub) token(w http.ResponseWriter, r *http.Request) {
	form, err := httpform.Post(w, r, 16<<10)
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	g.mu.Lock()
	g.noteBearer(r)
	c, ok := g.codes[form.Get("code")]
	delete(g.codes, form.Get("code"))
	tokenErr, tokenScope := g.faults.TokenError, g.faults.TokenScope
	answer := map[string]string{}
	switch {
	case tokenErr != "":
		answer["error"] = tokenErr
	case id != g.ClientID || secret != g.ClientSecret:
		answer["error"] = "incorrect_client_credentials"
	case !ok || c.redirectURI != form.Get("redirect_uri") || pkce.Challenge(form.Get("code_verifier")) != c.challenge:
		answer["error"] = "bad_verification_code"
	default:
		tok := "gho_" + pkce.GenerateVerifier()
		g.tokens[tok] = c.user
		answer = map[string]string{"access_token": tok, "token_type": "bearer", "scope": cmp.Or(tokenScope, c.scope)}
	}
	g.mu.Unlock()
	// GitHub answers errors with 200, and form-encoded unless asked for JSON.
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(answer)
		return
	}
	v := url.Values{}
	for k, s := range answer {
		v.Set(k, s)
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = io.WriteString(w, v.Encode())
}

// bearer returns the user of the request's token.
func (g *GitHub) bearer(w http.ResponseWriter, r *http.Request) (GitHubUser, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noteBearer(r)
	u, known := g.tokens[tok]
	if !ok || !known || r.Header.Get("User-Agent") == "" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"message":"Bad credentials"}`)
		return u, false
	}
	return u, true
}

// noteBearer records the path of a request that carries a bearer token.
// Called with g.mu held.
func (g *GitHub) noteBearer(r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		g.bearerAt = append(g.bearerAt, r.URL.Path)
	}
}

func (g *GitHub) userInfo(w http.ResponseWriter, r *http.Request) {
	u, ok := g.bearer(w, r)
	if !ok {
		return
	}
	g.mu.Lock()
	f := g.faults
	g.mu.Unlock()
	switch {
	case f.UserSlow:
		<-r.Context().Done()
		return
	case f.UserStatus != 0:
		http.Error(w, "fault", f.UserStatus)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if f.UserBody != "" {
		_, _ = io.WriteString(w, f.UserBody)
		return
	}
	_ = json.NewEncoder(w).Encode(u)
}

func (g *GitHub) emails(w http.ResponseWriter, r *http.Request) {
	u, ok := g.bearer(w, r)
	if !ok {
		return
	}
	if u.Emails == nil {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(u.Emails)
}

func (g *GitHub) orgs(w http.ResponseWriter, r *http.Request) {
	g.members(w, r, func(u GitHubUser) []any {
		out := make([]any, 0, len(u.Orgs))
		for i, o := range u.Orgs {
			out = append(out, map[string]any{"login": o, "id": 1000 + i, "url": "https://api.github.com/orgs/" + o, "description": nil})
		}
		return out
	})
}

func (g *GitHub) teams(w http.ResponseWriter, r *http.Request) {
	g.members(w, r, func(u GitHubUser) []any {
		out := make([]any, 0, len(u.Teams))
		for i, t := range u.Teams {
			org, slug, _ := strings.Cut(t, "/")
			out = append(out, map[string]any{"slug": slug, "name": slug, "id": 2000 + i, "privacy": "closed",
				"organization": map[string]any{"login": org, "id": 1000 + i}})
		}
		return out
	})
}

// members answers one page of the user's entries, or the faults.
func (g *GitHub) members(w http.ResponseWriter, r *http.Request, entries func(GitHubUser) []any) {
	u, ok := g.bearer(w, r)
	if !ok {
		return
	}
	g.mu.Lock()
	f := g.faults
	g.mu.Unlock()
	switch {
	case f.MembersSlow:
		<-r.Context().Done()
		return
	case f.MembersStatus != 0:
		http.Error(w, `{"message":"fault"}`, f.MembersStatus)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if f.MembersBody != "" {
		_, _ = io.WriteString(w, f.MembersBody)
		return
	}
	perPage, err := strconv.Atoi(cmp.Or(r.URL.Query().Get("per_page"), "30"))
	if err != nil || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, err := strconv.Atoi(cmp.Or(r.URL.Query().Get("page"), "1"))
	if err != nil || page < 1 || page > 1<<20 {
		page = 1
	}
	all := entries(u)
	start := min((page-1)*perPage, len(all))
	_ = json.NewEncoder(w).Encode(all[start:min(start+perPage, len(all))])
}
