package fakeas

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// Cleaner registers functions to run when a test ends; *testing.T,
// *testing.B and *Cleanup implement it.
type Cleaner interface{ Cleanup(func()) }

// Cleanup collects functions to run at Close, for examples, which have no
// *testing.T. The zero value is ready to use.
type Cleanup struct{ fns []func() }

// Cleanup registers fn.
func (c *Cleanup) Cleanup(fn func()) { c.fns = append(c.fns, fn) }

// Close runs the registered functions, last first.
func (c *Cleanup) Close() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

// ISSMode says what the authorization response's iss parameter carries.
type ISSMode int

// Modes of the iss parameter (RFC 9207).
const (
	ISSCorrect    ISSMode = iota // the metadata issuer
	ISSOmit                      // no iss
	ISSWrong                     // https://evil.example.com
	ISSNormalized                // the issuer with a trailing slash
)

// Options configure a Server. The zero value is a conformant server that
// advertises iss, S256 and dynamic registration for public clients.
type Options struct {
	PathPrefix            string   // issuer path, e.g. "/tenant1"
	MetadataAt            string   // "", "oauth" (RFC 8414), "openid" (OIDC inserted), "openid-appended", "none"
	MetadataIssuer        string   // issuer published in metadata; "" = the real one
	AuthorizationEndpoint string   // override the published endpoint
	CodeChallengeMethods  []string // nil = ["S256"]
	OmitCodeChallenge     bool     // publish no code_challenge_methods_supported
	NoISSAdvertised       bool     // omit authorization_response_iss_parameter_supported
	ISS                   ISSMode
	CIMD                  bool     // advertise client_id_metadata_document_supported
	NoRegistration        bool     // no registration_endpoint
	AuthMethods           []string // token_endpoint_auth_methods_supported; nil = ["none"]
	RegisterMethod        string   // force the registered method in DCR responses
	ScopesSupported       []string
	DenyScopes            []string // never granted, even when requested
	IssueRefreshTokens    bool
	RotateRefreshTokens   bool
	ExpiresIn             int64  // 0 = 3600; <0 = omit
	TokenType             string // "" = Bearer; "-" = omit
	PadTokenResponse      int    // bytes of padding in the token response
	AuthorizeError        string // answer /authorize with this error code
	EchoSecrets           bool   // put the credentials received into error descriptions
	PreRegistered         []Client
	MetadataCacheControl  string
}

// Client is a registered client.
type Client struct {
	ID, Secret, Method string
	RedirectURIs       []string
}

// TokenRequest is one recorded token request.
type TokenRequest struct {
	Form   url.Values
	Header http.Header
}

// Grant is what an access token stands for.
type Grant struct {
	ClientID, Resource string
	Scopes             []string
}

type code struct {
	Grant
	challenge, redirectURI string
}

// Server is the fake authorization server.
type Server struct {
	*httptest.Server

	base string // URL of the listener serving this server

	mu            sync.Mutex
	opts          Options
	hits          map[string]int
	paths         []string
	authorizes    []url.Values
	tokens        []TokenRequest
	registrations []oauthmeta.ClientMetadata
	clients       map[string]Client
	codes         map[string]code
	access        map[string]Grant
	refresh       map[string]Grant
	secrets       []string
}

// New starts a server on 127.0.0.1; it is closed when the test ends.
func New(t Cleaner, opts Options) *Server {
	s := &Server{opts: opts, hits: map[string]int{}, clients: map[string]Client{},
		codes: map[string]code{}, access: map[string]Grant{}, refresh: map[string]Grant{}}
	for _, c := range opts.PreRegistered {
		s.clients[c.ID] = c
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.base = s.Server.URL
	t.Cleanup(s.Close)
	return s
}

// NewCombined returns an authorization server and a protected MCP server
// on one origin, as MCP 2025-03-26 servers were: the resource serves the
// authorization server's endpoints for every path it does not handle.
func NewCombined(t Cleaner, asOpts Options, rsOpts ResourceOptions) (*Server, *Resource) {
	s := &Server{opts: asOpts, hits: map[string]int{}, clients: map[string]Client{},
		codes: map[string]code{}, access: map[string]Grant{}, refresh: map[string]Grant{}}
	for _, c := range asOpts.PreRegistered {
		s.clients[c.ID] = c
	}
	r := NewResource(t, rsOpts, s)
	r.mu.Lock()
	r.fallback = http.HandlerFunc(s.serve)
	r.mu.Unlock()
	s.mu.Lock()
	s.base = r.URL
	s.mu.Unlock()
	return s, r
}

// Issuer returns the issuer identifier.
func (s *Server) Issuer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + s.opts.PathPrefix
}

// Paths returns the request paths served, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// Update changes the options of a running server.
func (s *Server) Update(fn func(*Options)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.opts)
}

// Hits returns how often path was requested.
func (s *Server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// TotalHits returns the number of requests served.
func (s *Server) TotalHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

// Authorizations returns the recorded authorization request queries.
func (s *Server) Authorizations() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authorizes)
}

// TokenRequests returns the recorded token requests.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Registrations returns the recorded registration requests.
func (s *Server) Registrations() []oauthmeta.ClientMetadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.registrations)
}

// Lookup returns the grant of an access token this server issued.
func (s *Server) Lookup(token string) (Grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.access[token]
	return g, ok
}

// Secrets returns every credential the server handed out or received:
// codes, access and refresh tokens, client secrets, PKCE verifiers. None of
// them may ever appear in an error message or a log record.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.secrets)
	for _, tr := range s.tokens {
		if v := tr.Form.Get("code_verifier"); v != "" {
			out = append(out, v)
		}
	}
	for _, c := range s.clients {
		if c.Secret != "" {
			out = append(out, c.Secret)
		}
	}
	return out
}

// RevokeAccessTokens invalidates every access token issued so far.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.paths = append(s.paths, r.URL.Path)
	opts, base := s.opts, s.base
	s.mu.Unlock()
	p := opts.PathPrefix
	switch {
	case r.URL.Path == s.metadataPath(opts):
		s.metadata(w, opts, base)
	case r.URL.Path == p+"/authorize":
		s.authorize(w, r, opts, base)
	case r.URL.Path == p+"/token" && r.Method == http.MethodPost:
		s.token(w, r, opts)
	case r.URL.Path == p+"/register" && r.Method == http.MethodPost && !opts.NoRegistration:
		s.register(w, r, opts)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) metadataPath(o Options) string {
	switch o.MetadataAt {
	case "openid":
		return "/.well-known/openid-configuration" + o.PathPrefix
	case "openid-appended":
		return o.PathPrefix + "/.well-known/openid-configuration"
	case "none":
		return "\x00"
	default:
		return "/.well-known/oauth-authorization-server" + o.PathPrefix
	}
}

func (s *Server) metadata(w http.ResponseWriter, o Options, origin string) {
	base := origin + o.PathPrefix
	md := map[string]any{
		"issuer":                   base,
		"authorization_endpoint":   base + "/authorize",
		"token_endpoint":           base + "/token",
		"response_types_supported": []string{"code"},
		"grant_types_supported":    []string{"authorization_code", "refresh_token"},
	}
	if o.MetadataIssuer != "" {
		md["issuer"] = o.MetadataIssuer
	}
	if o.AuthorizationEndpoint != "" {
		md["authorization_endpoint"] = o.AuthorizationEndpoint
	}
	if !o.OmitCodeChallenge {
		md["code_challenge_methods_supported"] = cmp(o.CodeChallengeMethods, []string{"S256"})
	}
	if !o.NoISSAdvertised {
		md["authorization_response_iss_parameter_supported"] = true
	}
	if o.CIMD {
		md["client_id_metadata_document_supported"] = true
	}
	if !o.NoRegistration {
		md["registration_endpoint"] = base + "/register"
	}
	md["token_endpoint_auth_methods_supported"] = cmp(o.AuthMethods, []string{"none"})
	if o.ScopesSupported != nil {
		md["scopes_supported"] = o.ScopesSupported
	}
	if o.MetadataCacheControl != "" {
		w.Header().Set("Cache-Control", o.MetadataCacheControl)
	}
	writeJSON(w, http.StatusOK, md)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request, o Options, base string) {
	q := r.URL.Query()
	s.mu.Lock()
	s.authorizes = append(s.authorizes, q)
	s.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || !redirect.IsAbs() {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	cl, ok := s.client(q.Get("client_id"), o)
	if !ok || (len(cl.RedirectURIs) > 0 && !slices.ContainsFunc(cl.RedirectURIs, func(u string) bool { return redirectMatch(u, redirect.String()) })) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	out := redirect.Query()
	out.Set("state", q.Get("state"))
	switch o.ISS {
	case ISSCorrect:
		out.Set("iss", metadataIssuer(o, base))
	case ISSWrong:
		out.Set("iss", "https://evil.example.com")
	case ISSNormalized:
		out.Set("iss", metadataIssuer(o, base)+"/")
	}
	switch {
	case o.AuthorizeError != "":
		out.Set("error", o.AuthorizeError)
		out.Set("error_description", "denied by the test")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || !pkce.ValidChallenge(q.Get("code_challenge")):
		out.Set("error", "invalid_request")
	default:
		c := randomString()
		s.mu.Lock()
		granted := slices.DeleteFunc(strings.Fields(q.Get("scope")), func(s string) bool { return slices.Contains(o.DenyScopes, s) })
		s.codes[c] = code{Grant: Grant{ClientID: cl.ID, Resource: q.Get("resource"), Scopes: granted},
			challenge: q.Get("code_challenge"), redirectURI: redirect.String()}
		s.mu.Unlock()
		s.mu.Lock()
		s.secrets = append(s.secrets, c)
		s.mu.Unlock()
		out.Set("code", c)
	}
	redirect.RawQuery = out.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func metadataIssuer(o Options, base string) string {
	if o.MetadataIssuer != "" {
		return o.MetadataIssuer
	}
	return base + o.PathPrefix
}

// client resolves a client_id: registered, pre-registered or a metadata
// document URL (accepted without fetching when CIMD is advertised).
func (s *Server) client(id string, o Options) (Client, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, true
	}
	if o.CIMD && strings.HasPrefix(id, "https://") {
		return Client{ID: id, Method: "none"}, true
	}
	return Client{}, false
}

func redirectMatch(registered, requested string) bool {
	if registered == requested {
		return true
	}
	a, err1 := url.Parse(registered)
	b, err2 := url.Parse(requested)
	return err1 == nil && err2 == nil && a.Hostname() == "127.0.0.1" && b.Hostname() == "127.0.0.1" &&
		a.Scheme == b.Scheme && a.Path == b.Path
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, map[string]string{"error": code})
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func cmp(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}
