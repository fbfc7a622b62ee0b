package oauthtest

import (
	"cmp"
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

// ASOptions configure an [AS]. The zero value is a conformant server that
// advertises iss, S256 and dynamic registration for public clients. Its
// endpoints are /authorize, /token, /register and /introspect under
// PathPrefix.
type ASOptions struct {
	TLS                   bool     // https (its Client trusts it); read by NewAS only
	PathPrefix            string   // issuer path, e.g. "/tenant1"
	MetadataAt            string   // "", "oauth" (RFC 8414), "openid" (OIDC inserted), "openid-appended", "none"
	MetadataIssuer        string   // issuer published in metadata; "" = the real one
	AuthorizationEndpoint string   // override the published endpoint
	CodeChallengeMethods  []string // nil = ["S256"]
	OmitCodeChallenge     bool     // publish no code_challenge_methods_supported
	NoISSAdvertised       bool     // omit authorization_response_iss_parameter_supported
	ISS                   ISSMode
	CIMD                  bool     // advertise client_id_metadata_document_supported
	DPoPAlgs              []string // dpop_signing_alg_values_supported
	JWKSURI               string   // jwks_uri
	NoRegistration        bool     // no registration_endpoint
	RevocationEndpoint    string   // revocation_endpoint, published as is; "" = none
	AuthMethods           []string // token_endpoint_auth_methods_supported; nil = ["none"]
	RegisterMethod        string   // force the registered method in DCR responses
	ScopesSupported       []string
	DenyScopes            []string // never granted: dropped from codes, refused in token exchanges
	// ScopeGrants grant a requested scope as these scopes instead, as
	// Entra grants "{resource}/.default" as the permissions consented.
	// Update replaces the map; it must not change it in place.
	ScopeGrants          map[string][]string
	IssueRefreshTokens   bool
	RotateRefreshTokens  bool
	ExpiresIn            int64  // 0 = 3600; <0 = omit
	TokenType            string // "" = Bearer; "-" = omit
	PadTokenResponse     int    // bytes of padding in the token response
	AuthorizeError       string // answer /authorize with this error code
	EchoSecrets          bool   // put the credentials received into error descriptions
	PreRegistered        []RegisteredClient
	MetadataCacheControl string
	// SubjectTokens are the subject tokens a token exchange (RFC 8693)
	// accepts, besides the access tokens the server issued.
	SubjectTokens []string
	// Exchanges are what a token exchange issues, by its audience or
	// resource; a target not listed is refused with invalid_target.
	Exchanges map[string]ExchangeTarget
	// Faults answer these paths instead of the server (a broken server).
	// Update replaces maps; it must not change them in place.
	Faults map[string]http.HandlerFunc
}

// ExchangeTarget is what a token exchange for one audience or resource
// issues.
type ExchangeTarget struct {
	Token     string   // the access token
	ExpiresIn int64    // 0 = omitted
	Scopes    []string // granted when the request names none; a request may name only these
}

// RegisteredClient is a client of an [AS].
type RegisteredClient struct {
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

// AS is a small, strict, auto-approving OAuth 2.1 authorization server on
// 127.0.0.1: just enough of RFC 6749/OAuth 2.1, RFC 7636, RFC 8414,
// RFC 7591, RFC 9207, RFC 8707 and RFC 8693 to be conformant, plus a
// switch for each misbehaviour a peer must survive. It records every
// request, so tests can assert what was sent and how often.
type AS struct {
	*httptest.Server // nil for a server made by [NewASAt]

	base string // origin of the listener serving this server

	mu            sync.Mutex
	opts          ASOptions
	paths         []string
	authorizes    []url.Values
	tokens        []TokenRequest
	registrations []oauthmeta.ClientMetadata
	clients       map[string]RegisteredClient
	codes         map[string]code
	access        map[string]Grant
	refresh       map[string]Grant
	secrets       []string
	introspection map[string]any
}

// NewAS starts a server on 127.0.0.1; it is closed when the test ends.
func NewAS(t Cleaner, opts ASOptions) *AS {
	s := NewASAt("", opts)
	start := httptest.NewServer
	if opts.TLS {
		start = httptest.NewTLSServer
	}
	s.Server = start(s)
	s.base = s.Server.URL
	t.Cleanup(s.Close)
	return s
}

// NewASAt returns a server without a listener, whose issuer is at origin:
// another test server on that origin passes requests to its ServeHTTP.
func NewASAt(origin string, opts ASOptions) *AS {
	s := &AS{base: origin, opts: opts, clients: map[string]RegisteredClient{},
		codes: map[string]code{}, access: map[string]Grant{}, refresh: map[string]Grant{}, introspection: map[string]any{}}
	for _, c := range opts.PreRegistered {
		s.clients[c.ID] = c
	}
	return s
}

// NewCombined returns an authorization server and a protected MCP server
// on one origin, as MCP 2025-03-26 servers were: the resource serves the
// authorization server's endpoints for every path it does not handle.
func NewCombined(t Cleaner, asOpts ASOptions, rsOpts ResourceOptions) (*AS, *Resource) {
	r := NewResource(t, rsOpts)
	s := NewASAt(r.URL, asOpts)
	r.SetAuthServers(s)
	locked(&r.mu, func() { r.fallback = s })
	return s, r
}

// Issuer returns the issuer identifier.
func (s *AS) Issuer() string { return s.base + s.options().PathPrefix }

func (s *AS) options() ASOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts
}

// Paths returns the request paths served, in order.
func (s *AS) Paths() []string { return cloneLocked(&s.mu, &s.paths) }

// Update changes the options of a running server.
func (s *AS) Update(fn func(*ASOptions)) { locked(&s.mu, func() { fn(&s.opts) }) }

// ForgetClient deletes a registered client, as servers that expire dynamic
// registrations do: its client_id then gets invalid_client at the token
// endpoint and is refused at the authorization endpoint.
func (s *AS) ForgetClient(id string) { locked(&s.mu, func() { delete(s.clients, id) }) }

// Hits returns how often path was requested.
func (s *AS) Hits(path string) int {
	return len(slices.DeleteFunc(s.Paths(), func(p string) bool { return p != path }))
}

// TotalHits returns the number of requests served.
func (s *AS) TotalHits() int { return len(s.Paths()) }

// Authorizations returns the recorded authorization request queries.
func (s *AS) Authorizations() []url.Values { return cloneLocked(&s.mu, &s.authorizes) }

// TokenRequests returns the recorded token requests.
func (s *AS) TokenRequests() []TokenRequest { return cloneLocked(&s.mu, &s.tokens) }

// Registrations returns the recorded registration requests.
func (s *AS) Registrations() []oauthmeta.ClientMetadata { return cloneLocked(&s.mu, &s.registrations) }

// Lookup returns the grant of an access token this server issued.
func (s *AS) Lookup(token string) (Grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.access[token]
	return g, ok
}

// Secrets returns every credential the server handed out or received:
// codes, access and refresh tokens, client secrets, PKCE verifiers. None of
// them may ever appear in an error message or a log record.
func (s *AS) Secrets() []string {
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
func (s *AS) RevokeAccessTokens() { locked(&s.mu, func() { clear(s.access) }) }

// ServeHTTP answers a request to the server.
func (s *AS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	opts, base := s.opts, s.base
	s.mu.Unlock()
	p := opts.PathPrefix
	switch {
	case opts.Faults[r.URL.Path] != nil:
		opts.Faults[r.URL.Path](w, r)
	case r.URL.Path == metadataPath(opts):
		metadata(w, opts, base)
	case r.URL.Path == p+"/authorize":
		s.authorize(w, r, opts, base)
	case r.URL.Path == p+"/token" && r.Method == http.MethodPost:
		s.token(w, r, opts)
	case r.URL.Path == p+"/introspect" && r.Method == http.MethodPost:
		s.introspect(w, r, opts)
	case r.URL.Path == p+"/register" && r.Method == http.MethodPost && !opts.NoRegistration:
		s.register(w, r, opts)
	default:
		http.NotFound(w, r)
	}
}

func metadataPath(o ASOptions) string {
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

func metadata(w http.ResponseWriter, o ASOptions, origin string) {
	base := origin + o.PathPrefix
	md := map[string]any{
		"issuer":                                metadataIssuer(o, base),
		"authorization_endpoint":                cmp.Or(o.AuthorizationEndpoint, base+"/authorize"),
		"token_endpoint":                        base + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported": cmpSlice(o.AuthMethods, []string{"none"}),
	}
	if !o.OmitCodeChallenge {
		md["code_challenge_methods_supported"] = cmpSlice(o.CodeChallengeMethods, []string{"S256"})
	}
	if !o.NoISSAdvertised {
		md["authorization_response_iss_parameter_supported"] = true
	}
	if o.CIMD {
		md["client_id_metadata_document_supported"] = true
	}
	if o.JWKSURI != "" {
		md["jwks_uri"] = o.JWKSURI
	}
	if o.DPoPAlgs != nil {
		md["dpop_signing_alg_values_supported"] = o.DPoPAlgs
	}
	if !o.NoRegistration {
		md["registration_endpoint"] = base + "/register"
	}
	if o.RevocationEndpoint != "" {
		md["revocation_endpoint"] = o.RevocationEndpoint
	}
	if o.ScopesSupported != nil {
		md["scopes_supported"] = o.ScopesSupported
	}
	if o.MetadataCacheControl != "" {
		w.Header().Set("Cache-Control", o.MetadataCacheControl)
	}
	writeJSON(w, http.StatusOK, md)
}

// metadataIssuer is the issuer the metadata and iss parameters publish;
// base is the real one.
func metadataIssuer(o ASOptions, base string) string { return cmp.Or(o.MetadataIssuer, base) }

func (s *AS) authorize(w http.ResponseWriter, r *http.Request, o ASOptions, base string) {
	q := r.URL.Query()
	locked(&s.mu, func() { s.authorizes = append(s.authorizes, q) })
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
	switch iss := metadataIssuer(o, base+o.PathPrefix); o.ISS {
	case ISSCorrect:
		out.Set("iss", iss)
	case ISSWrong:
		out.Set("iss", "https://evil.example.com")
	case ISSNormalized:
		out.Set("iss", iss+"/")
	}
	switch {
	case o.AuthorizeError != "":
		out.Set("error", o.AuthorizeError)
		out.Set("error_description", "denied by the test")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || !pkce.ValidChallenge(q.Get("code_challenge")):
		out.Set("error", "invalid_request")
	default:
		c := pkce.GenerateVerifier()
		var granted []string
		for _, s := range strings.Fields(q.Get("scope")) {
			if g, ok := o.ScopeGrants[s]; ok {
				granted = append(granted, g...)
			} else if !slices.Contains(o.DenyScopes, s) {
				granted = append(granted, s)
			}
		}
		locked(&s.mu, func() {
			s.codes[c] = code{Grant: Grant{ClientID: cl.ID, Resource: q.Get("resource"), Scopes: granted},
				challenge: q.Get("code_challenge"), redirectURI: redirect.String()}
			s.secrets = append(s.secrets, c)
		})
		out.Set("code", c)
	}
	redirect.RawQuery = out.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// client resolves a client_id: registered, pre-registered or a metadata
// document URL (accepted without fetching when CIMD is advertised).
func (s *AS) client(id string, o ASOptions) (RegisteredClient, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, true
	}
	if o.CIMD && strings.HasPrefix(id, "https://") {
		return RegisteredClient{ID: id, Method: "none"}, true
	}
	return RegisteredClient{}, false
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

func cmpSlice(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}
