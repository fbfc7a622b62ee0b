package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
	"golang.org/x/oauth2"
)

// Limits of the pending authorization records.
const (
	pendingTTL = 10 * time.Minute
	maxPending = 64
	offline    = "offline_access"
)

// pendingAuthorization is the single-use record kept, keyed by state,
// between sending the user to the authorization server and receiving its
// response. Everything the response is checked
// against and the code is redeemed with comes from here, never from the
// response.
type pendingAuthorization struct {
	state    string
	verifier string
	// issuer is the validated metadata issuer, recorded before the redirect
	// and compared with the response's iss.
	issuer                string
	issParameterSupported bool
	// tokenEndpoint is the only place the code may be redeemed.
	tokenEndpoint string
	resource      string // canonical MCP server URL
	indicator     string // RFC 8707 resource sent (CL-04)
	redirectURI   string
	scopes        []string
	registration  *tokenstore.Registration
	registered    bool // registration was obtained for this request, not reused
	auth          *clientAuth
	dpop          *dpopKey // the key the tokens are bound to; nil: Bearer
	created       time.Time
}

// AuthorizationRequest is one authorization an [Authorizer] carries out.
// The Authorizer calls Start with the redirect URI it will receive the
// response on and sends the user (or an HTTP client) to the URL Start
// returns. It is not safe for concurrent use.
type AuthorizationRequest struct {
	c      *Client
	d      *tokenstore.Discovery
	scopes []string
	dpop   *dpopKey

	mu          sync.Mutex
	state       string
	redirectURI string
}

// Issuer returns the authorization server the request goes to.
func (r *AuthorizationRequest) Issuer() string { return r.d.Issuer }

// Resource returns the MCP server the authorization is for.
func (r *AuthorizationRequest) Resource() string { return r.d.Resource }

// registeredRedirectURIs returns the redirect URIs of the registration the
// client holds for the request's authorization server from an earlier
// dynamic registration, or nil.
func (r *AuthorizationRequest) registeredRedirectURIs(ctx context.Context) []string {
	if r.c.preRegistered(r.d.Issuer) != nil {
		return nil
	}
	reg, err := r.c.store.Registration(ctx, r.d.Issuer)
	if err != nil || reg.Method != tokenstore.MethodDynamic {
		return nil
	}
	return slices.Clone(reg.RedirectURIs)
}

// Start prepares the authorization request for redirectURI and returns the URL
// to visit. redirectURI must be https or plain http to a loopback host. Start
// registers the client if needed, creates a fresh PKCE verifier and state,
// records the expected issuer and token endpoint before returning, and checks
// the URL it returns. It may be called once.
func (r *AuthorizationRequest) Start(ctx context.Context, redirectURI string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != "" {
		return "", fmt.Errorf("%w: Start called twice", errAuthorizer)
	}
	if err := checkRedirectURI(redirectURI); err != nil {
		return "", err
	}
	c, md := r.c, r.d.AuthServer
	reg, registered, err := c.registration(ctx, r.d, redirectURI)
	if err != nil {
		return "", err
	}
	rec := &pendingAuthorization{
		state:                 pkce.GenerateVerifier(), // 32 random bytes, like the verifier
		verifier:              pkce.GenerateVerifier(),
		issuer:                md.Issuer,
		issParameterSupported: md.AuthorizationResponseISSParameterSupported,
		tokenEndpoint:         md.TokenEndpoint,
		resource:              r.d.Resource,
		indicator:             r.d.ResourceIndicator,
		redirectURI:           redirectURI,
		scopes:                slices.Clone(r.scopes),
		registration:          reg,
		registered:            registered,
		auth:                  registeredAuth(reg, md),
		dpop:                  r.dpop,
		created:               c.clock.Now(),
	}
	o := c.cfg.AuthServers[md.Issuer]
	cfg := oauth2.Config{
		ClientID:    reg.ClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint},
		RedirectURL: redirectURI,
		Scopes:      o.requestScopes(rec.scopes),
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(rec.verifier)}
	if o.sendsResource(false) {
		opts = append(opts, oauth2.SetAuthURLParam("resource", rec.indicator))
	}
	// The issuer's extra parameters (validated by New: none of the above).
	for name, values := range o.AuthorizationParams {
		opts = append(opts, oauth2.SetAuthURLParam(name, values[0]))
	}
	authURL := cfg.AuthCodeURL(rec.state, opts...)
	if err := c.policy.CheckURL(authURL); err != nil {
		return "", fmt.Errorf("%w: authorization URL: %w", errUnsafeAuthorizationURL, err)
	}
	c.pending.Add(rec.state, rec, rec.created.Add(pendingTTL))
	r.state, r.redirectURI = rec.state, redirectURI
	return authURL, nil
}

// HTTPClient returns a client for an Authorizer that drives the
// authorization server over HTTP (see [FollowRedirects]): the SSRF guards
// of discovery apply to every hop, https only (or loopback http when
// allowed), at most 10 redirects, cookies kept for this request only, and
// the redirect to the redirect URI is returned instead of followed. Call
// it after Start.
func (r *AuthorizationRequest) HTTPClient() *http.Client {
	r.mu.Lock()
	redirectURI := r.redirectURI
	r.mu.Unlock()
	hc := r.c.guardedClient(nil)
	jar, _ := cookiejar.New(nil)
	hc.Jar = jar
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if atRedirectURI(req.URL, redirectURI) {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return fmt.Errorf("%w: too many redirects", errAuthorizer)
		}
		if err := r.c.fetcher.CheckURL(req.URL.String()); err != nil {
			return wrapFetch(ErrAuthorization, "authorization redirect", err)
		}
		return nil
	}
	return hc
}

// checkRedirectURI accepts the redirect URI an Authorizer gives: one acceptable
// to any client (clientmeta.CheckRedirectURI: absolute, no fragment, no
// user information), and of those only https or plain http to a loopback
// address or "localhost": this client receives no private-use scheme.
func checkRedirectURI(raw string) error {
	if err := clientmeta.CheckRedirectURI(raw); err != nil {
		return fmt.Errorf("%w: redirect URI: %w", errUnsafeAuthorizationURL, err)
	}
	if u, err := url.Parse(raw); err != nil || u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%w: redirect URI must be https or http to loopback", errUnsafeAuthorizationURL)
	}
	return nil
}

// atRedirectURI reports whether u is the redirect URI (scheme, host, port
// and path; the query is the response).
func atRedirectURI(u *url.URL, redirectURI string) bool {
	r, err := url.Parse(redirectURI)
	return err == nil && u.Scheme == r.Scheme && u.Host == r.Host && u.EscapedPath() == r.EscapedPath()
}

// selectScopes applies the MCP scope selection strategy (requirement
// CL-14): the challenge's scope, else all of the resource's
// scopes_supported, else none (scope omitted).
func selectScopes(ch oauthmeta.Challenge, d *tokenstore.Discovery) []string {
	if s := ch.Scopes(); len(s) > 0 {
		return s
	}
	return slices.Clone(d.ScopesSupported)
}

// adjustOfflineAccess applies requirement CL-20: offline_access only if the
// authorization server lists it, added when other scopes are requested and
// the configuration allows it.
func (c *Client) adjustOfflineAccess(scopes []string, md *oauthmeta.AuthServerMetadata) []string {
	if !md.SupportsScope(offline) || c.cfg.DisableOfflineAccess {
		return slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == offline })
	}
	if len(scopes) == 0 || slices.Contains(scopes, offline) {
		return scopes
	}
	return append(slices.Clone(scopes), offline)
}

// union returns a followed by the members of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// complete processes the authorization response that arrived at redirect
// for the request that used state: state, then the RFC 9207 table
// before the code or any error text is looked at, then the code
// exchange at the recorded token endpoint.
func (c *Client) complete(ctx context.Context, redirect *url.URL, state string) (*pendingAuthorization, *tokenstore.Token, error) {
	q, err := url.ParseQuery(redirect.RawQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: malformed response", errAuthorizationResponse)
	}
	states := q["state"]
	if len(states) != 1 || states[0] != state {
		return nil, nil, errUnknownState
	}
	rec, ok := c.pending.Take(states[0], nil)
	if !ok {
		return nil, nil, errUnknownState
	}
	if !atRedirectURI(redirect, rec.redirectURI) {
		return nil, nil, errRedirectMismatch
	}
	if err := checkIssParameter(rec.issParameterSupported, rec.issuer, q); err != nil {
		return nil, nil, err
	}
	if errs := q["error"]; len(errs) > 0 {
		oe := sanitizeError(&oauthmeta.Error{Code: oauthmeta.ErrorCode(errs[0]), Description: q.Get("error_description"), URI: q.Get("error_uri")})
		return nil, nil, fmt.Errorf("%w: %w", errAuthorizationResponse, oe)
	}
	codes := q["code"]
	if len(codes) != 1 || codes[0] == "" {
		return nil, nil, fmt.Errorf("%w: no single code in the response", errAuthorizationResponse)
	}
	tok, err := c.exchangeCode(ctx, rec, codes[0])
	return rec, tok, err
}

// errNotStarted reports an Authorizer that returned without calling Start.
var errNotStarted = fmt.Errorf("%w: the Authorizer returned without starting the request", errAuthorizer)

// State returns the request's state after Start, so an Authorizer that
// listens for the response can ignore stray requests.
func (r *AuthorizationRequest) State() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// subset reports whether every member of a is in b.
func subset(a, b []string) bool {
	return !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

// checkIssParameter applies the RFC 9207 §2.4 table exactly as MCP
// 2026-07-28 states it, to the form-decoded response
// parameters q:
//
//	metadata advertises iss | iss in response | action
//	true                    | present          | compare
//	true                    | absent           | reject
//	false or absent         | present          | compare
//	false or absent         | absent           | proceed
//
// The comparison is simple string equality with the issuer recorded before
// the redirect: no case folding, default-port removal, trailing-slash or
// percent-encoding normalization. A repeated iss is a mismatch. The
// caller must not use the response's code or error text unless this
// returns nil (a mix-up attacker controls them).
func checkIssParameter(advertised bool, expected string, q url.Values) error {
	vals, present := q["iss"]
	switch {
	case !present && advertised:
		return errIssuerMissing
	case !present:
		return nil
	case len(vals) != 1 || vals[0] != expected:
		return errIssuerParameterMismatch
	default:
		return nil
	}
}
