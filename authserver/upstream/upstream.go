package upstream

import (
	"cmp"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults of [Config].
const (
	// DefaultGroupsClaim is the ID token claim read for groups when
	// [Config.GroupsClaim] is empty.
	DefaultGroupsClaim = "groups"
	// DefaultTimeout bounds each call to the provider when
	// [Config.Timeout] is zero.
	DefaultTimeout = 10 * time.Second
)

// Config configures the login at an identity provider. The login is the
// authorization code flow with PKCE S256 and a single-use, browser-bound
// "state"; for OpenID Connect also a "nonce", and the ID token is verified
// (signature against the provider's JWK Set, "iss", "aud", "azp", "exp",
// "nonce").
type Config struct {
	// Issuer is the provider's issuer identifier: https, or http to a
	// loopback address with InsecureAllowHTTPLoopback. Required.
	// With OAuth2 set it is never fetched: it names the provider (GitHub:
	// "https://github.com") in [Subject], so changing it changes every
	// user's subject.
	Issuer string
	// OAuth2, when set, makes the provider a plain OAuth 2.0 one at these
	// endpoints, without discovery or ID token: the user comes from its
	// user-info endpoint. Nil means OpenID Connect, found by discovery from
	// Issuer.
	OAuth2 *OAuth2Endpoints
	// MultiTenant, when set, makes the OpenID provider a multi-tenant one
	// (Microsoft Entra ID's "organizations" or "common"): discovery from
	// Issuer, whose metadata names MultiTenant.IssuerTemplate, and ID
	// tokens accepted only from the tenants it lists. Nil means Issuer is
	// the only issuer. Not with OAuth2.
	MultiTenant *MultiTenant
	// ClientID and ClientSecret are the server's credentials at the
	// provider (client_secret_basic, or client_secret_post when the
	// provider supports only that). ClientID is required; with neither
	// ClientSecret nor ClientKey the server is a public client there (PKCE
	// only).
	ClientID, ClientSecret string
	// ClientKey, instead of ClientSecret, authenticates the server with
	// private_key_jwt (RFC 7523 §2.2): a fresh assertion per token
	// request, "aud" the provider's issuer, typ "JWT", signed with this key
	// (ECDSA, RSA of 2048 bits or more, or Ed25519) under ClientKeyID
	// ("kid", may be empty). Register its public key at the provider.
	ClientKey   crypto.Signer
	ClientKeyID string
	// Scopes requested from the provider. For OpenID Connect "openid" is
	// always sent, and empty means "openid email profile"; with OAuth2,
	// exactly these are sent (GitHub: "read:user user:email"; read:org is
	// added with [OAuth2Endpoints.GitHubAllow]), and empty means no scope
	// parameter.
	Scopes []string
	// AuthParams are extra parameters of the authorization request at the
	// provider, sent as given (the "google" [Preset] sets
	// access_type=offline and prompt=consent). The parameters the login
	// sets itself (response_type, client_id, redirect_uri, state, nonce,
	// code_challenge, code_challenge_method, scope), empty names and names
	// or values with control characters are refused. Nil means none.
	AuthParams map[string]string
	// GroupsClaim is the ID token claim (with OAuth2, the user-info member)
	// holding the user's groups (an array of strings, or one string). Empty
	// means [DefaultGroupsClaim].
	GroupsClaim string
	// TLSConfig is the client TLS configuration of the calls to the
	// provider (discovery, JWK Set, token and user-info endpoints), which
	// go to public addresses only, checked when they connect, without
	// following redirects to other origins. Nil means the system roots.
	TLSConfig *tls.Config
	// InsecureAllowHTTPLoopback permits a provider on plain http and at
	// loopback addresses, for tests and local development. False means
	// https to public addresses.
	InsecureAllowHTTPLoopback bool
	// Timeout bounds each call to the provider, connect to last byte; the
	// user gets an error page when it passes. It also bounds a token
	// refresh of the vault, whose refresh lease lasts twice Timeout. Zero
	// means [DefaultTimeout].
	Timeout time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time

	// net is the tests' resolver and dial function, reached through
	// nethook.Set and nethook.Of.
	netHook
}

// netHook embeds nethook.Hook in Config under an unexported name.
type netHook = nethook.Hook

// Provider is the login at one identity provider, OpenID Connect or plain
// OAuth 2.0, made by [New]; a [VaultConfig] refreshes its tokens there.
// Close stops the background refresh of the provider's keys.
type Provider interface {
	authserver.Login
	authserver.Readier
	io.Closer
	// refresh redeems a refresh token at the provider.
	refresh(ctx context.Context, refreshToken string) (*vaultedToken, error)
	// callTimeout bounds each call to the provider.
	callTimeout() time.Duration
}

var (
	_ Provider = (*oidcProvider)(nil)
	_ Provider = (*oauth2Provider)(nil)
)

// New validates c and returns the login at its provider: OpenID Connect,
// or plain OAuth 2.0 with c.OAuth2. It does no I/O: discovery happens at
// the first login. Errors match [authserver.ErrConfig]. Call Close when
// done.
func New(c Config) (Provider, error) {
	base, opts, err := newClient(c)
	if err != nil {
		return nil, err
	}
	if c.OAuth2 != nil {
		return newOAuth2(base, opts)
	}
	return newOIDC(base), nil
}

// Subject is the subject ("sub" of the server's tokens, the user of its
// grants and remembered consents) for the user sub of the provider issuer:
// "u-" followed by the unpadded base64url SHA-256 of the issuer, a zero
// byte and sub. It is stable for as long as the provider's issuer
// identifier and its sub for the user are, distinct for different
// providers, and reveals neither.
func Subject(issuer, sub string) string { return identity.Subject(issuer, sub) }

// client is what both kinds of provider share: the configuration, the
// guarded fetcher, the client's credentials and the code exchange.
type client struct {
	cfg     Config
	scopes  []string
	fetcher *safehttp.Fetcher
	now     func() time.Time
	timeout time.Duration
	// assertions signs private_key_jwt assertions; nil with a secret.
	assertions *jwtassert.ClientAssertionSigner
	// tenants is the checked Config.MultiTenant; nil for one issuer.
	tenants *tenants
	// tokenClient calls the token endpoint (for plain OAuth 2.0 asking
	// for JSON); nil means the fetcher's client.
	tokenClient *http.Client
}

// kind is what differs between OpenID Connect and plain OAuth 2.0.
type kind interface {
	// metadata returns the provider's endpoints.
	metadata(ctx context.Context) (*oauthmeta.AuthServerMetadata, error)
	// identity turns the token response into the verified user.
	identity(ctx context.Context, tok *oauth2.Token, nonce string) (*authserver.UpstreamIdentity, error)
	// authParams are added to the authorization request.
	authParams(l *authserver.LoginRequest) []oauth2.AuthCodeOption
	// assertionAudience is the "aud" of a private_key_jwt assertion.
	assertionAudience(m *oauthmeta.AuthServerMetadata) string
}

func configErr(field, msg string) error {
	return fmt.Errorf("%w: %s: %s", authserver.ErrConfig, field, msg)
}

// newClient validates what both kinds of provider share.
func newClient(c Config) (*client, safehttp.Options, error) {
	now := clock.Func(c.Now).Now
	switch {
	case c.Issuer == "" || c.ClientID == "":
		return nil, safehttp.Options{}, configErr("Upstream", "Issuer and ClientID are required")
	case c.ClientSecret != "" && c.ClientKey != nil:
		return nil, safehttp.Options{}, configErr("Upstream", "set ClientSecret or ClientKey, not both")
	case c.Timeout < 0:
		return nil, safehttp.Options{}, configErr("Upstream.Timeout", "must not be negative")
	}
	if err := checkAuthParams(c.AuthParams); err != nil {
		return nil, safehttp.Options{}, err
	}
	opts := safehttp.Options{
		TLSConfig: c.TLSConfig, InsecureAllowHTTPLoopback: c.InsecureAllowHTTPLoopback,
		Timeout: cmp.Or(c.Timeout, DefaultTimeout), MaxBytes: jwkset.MaxSize,
	}
	nethook.Of(&c).Apply(&opts)
	f := safehttp.New(opts)
	iss, err := url.Parse(c.Issuer)
	if err != nil || iss.RawQuery != "" || iss.Fragment != "" || f.CheckURL(c.Issuer) != nil {
		return nil, opts, configErr("Upstream.Issuer", "must be an https URL without query or fragment (http only to loopback with InsecureAllowHTTPLoopback)")
	}
	if c.MultiTenant != nil && c.OAuth2 != nil {
		return nil, opts, configErr("Upstream.MultiTenant", "is for OpenID Connect providers, not with OAuth2")
	}
	tenants, err := newTenants(c.MultiTenant, f)
	if err != nil {
		return nil, opts, err
	}
	var assertions *jwtassert.ClientAssertionSigner
	if c.ClientKey != nil {
		assertions, err = jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
			ClientID: c.ClientID, Key: c.ClientKey, KeyID: c.ClientKeyID, Type: "JWT", Now: now,
		})
		if err != nil {
			return nil, opts, configErr("Upstream.ClientKey", err.Error())
		}
	}
	cl := &client{assertions: assertions, tenants: tenants, cfg: c, scopes: scopes(&c), fetcher: f, now: now, timeout: opts.Timeout}
	cl.cfg.GroupsClaim = cmp.Or(c.GroupsClaim, DefaultGroupsClaim)
	cl.cfg.AuthParams = maps.Clone(c.AuthParams) // the caller's map may change later
	return cl, opts, nil
}

// ownedAuthParams are the authorization request parameters the login
// sets itself, which [Config.AuthParams] must not replace.
var ownedAuthParams = []string{
	"response_type", "client_id", "redirect_uri", "state", "nonce",
	"code_challenge", "code_challenge_method", "scope",
}

// checkAuthParams refuses extra authorization parameters that would
// replace the login's own or carry control characters.
func checkAuthParams(params map[string]string) error {
	for name, v := range params {
		switch {
		case name == "":
			return configErr("Upstream.AuthParams", "a parameter name is empty")
		case slices.Contains(ownedAuthParams, name):
			return configErr("Upstream.AuthParams", fmt.Sprintf("%q is set by the login itself", name))
		case hasControl(name) || hasControl(v):
			return configErr("Upstream.AuthParams", fmt.Sprintf("%.60q has control characters", name))
		}
	}
	return nil
}

// hasControl reports whether s has an ASCII control character or DEL.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// scopes are the scopes requested from the provider.
func scopes(c *Config) []string {
	var out []string
	requested := c.Scopes
	if c.OAuth2 == nil {
		out = []string{"openid"}
		if len(requested) == 0 {
			requested = []string{"email", "profile"}
		}
	}
	if c.OAuth2 != nil && c.OAuth2.GitHubAllow != nil {
		requested = append(slices.Clip(requested), githubOrgScope)
	}
	for _, s := range requested {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (c *client) callTimeout() time.Duration { return c.timeout }

// oauth2Config is the x/oauth2 configuration for the provider's endpoints.
func (c *client) oauth2Config(m *oauthmeta.AuthServerMetadata, redirectURI string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if ms := m.TokenEndpointAuthMethodsSupported; c.assertions != nil || c.cfg.ClientSecret == "" ||
		(len(ms) > 0 && !slices.Contains(ms, "client_secret_basic") && slices.Contains(ms, "client_secret_post")) {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, RedirectURL: redirectURI, Scopes: c.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint, TokenURL: m.TokenEndpoint, AuthStyle: style},
	}
}

// authorizationEndpoint implements [authserver.Login.AuthorizationEndpoint].
func (c *client) authorizationEndpoint(ctx context.Context, k kind) (string, error) {
	m, err := k.metadata(ctx)
	if err != nil {
		return "", err
	}
	return m.AuthorizationEndpoint, nil
}

// start implements [authserver.Login.Start]: the authorization request
// with the PKCE challenge of l's verifier and k's parameters.
func (c *client) start(ctx context.Context, k kind, l *authserver.LoginRequest) (string, error) {
	m, err := k.metadata(ctx)
	if err != nil {
		return "", err
	}
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(l.Verifier)}, k.authParams(l)...)
	for _, name := range slices.Sorted(maps.Keys(c.cfg.AuthParams)) {
		opts = append(opts, oauth2.SetAuthURLParam(name, c.cfg.AuthParams[name]))
	}
	if _, set := c.cfg.AuthParams["login_hint"]; l.LoginHint != "" && !set {
		opts = append(opts, oauth2.SetAuthURLParam("login_hint", l.LoginHint))
	}
	return c.oauth2Config(m, l.RedirectURI).AuthCodeURL(l.State, opts...), nil
}

// loginError is a failed login: the cause is logged, the answer goes to
// the MCP client.
type loginError struct {
	answer *oauthmeta.Error
	cause  error
}

func (e *loginError) Error() string   { return e.cause.Error() }
func (e *loginError) Unwrap() []error { return []error{e.cause, e.answer} }

// The answers of a failed login.
func refused(cause error) error {
	return &loginError{&oauthmeta.Error{Code: oauthmeta.CodeAccessDenied, Description: "the login at the identity provider failed"}, cause}
}

func unavailable(cause error) error {
	return &loginError{&oauthmeta.Error{Code: oauthmeta.CodeTemporarilyUnavailable, Description: "the identity provider is unavailable"}, cause}
}

// callback implements [authserver.Login.Callback]: it turns the provider's
// answer into a verified identity, or into the error the MCP client gets.
func (c *client) callback(ctx context.Context, k kind, q url.Values, l *authserver.LoginRequest) (*authserver.UpstreamIdentity, *oauth2.Token, error) {
	if e := q.Get("error"); e != "" {
		cause := fmt.Errorf("upstream refused the login: error %.64q", e)
		if e == string(oauthmeta.CodeTemporarilyUnavailable) || e == string(oauthmeta.CodeServerError) {
			return nil, nil, unavailable(cause)
		}
		return nil, nil, &loginError{&oauthmeta.Error{Code: oauthmeta.CodeAccessDenied,
			Description: "the identity provider refused the login"}, cause}
	}
	m, err := k.metadata(ctx)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	// RFC 9207: a provider that sends "iss" must send its own.
	if iss, sent := q["iss"]; (sent && iss[0] != m.Issuer) || (!sent && m.AuthorizationResponseISSParameterSupported) {
		return nil, nil, refused(errors.New("upstream callback with a wrong or missing iss"))
	}
	if q.Get("code") == "" {
		return nil, nil, refused(errors.New("upstream callback without a code"))
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(l.Verifier)}
	if c.assertions != nil {
		jwt, err := c.assertions.Sign(k.assertionAudience(m))
		if err != nil {
			return nil, nil, &loginError{&oauthmeta.Error{Code: oauthmeta.CodeServerError, Description: "internal error"},
				fmt.Errorf("signing the upstream client assertion: %w", err)}
		}
		opts = append(opts, oauth2.SetAuthURLParam("client_assertion_type", jwtassert.ClientAssertionType),
			oauth2.SetAuthURLParam("client_assertion", jwt))
	}
	hc := cmp.Or(c.tokenClient, c.fetcher.Client())
	tok, err := c.oauth2Config(m, l.RedirectURI).Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), q.Get("code"), opts...)
	if err != nil {
		// A RetrieveError's text carries the response body, which may
		// echo the code and verifier and is up to 1 MiB: keep the status.
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
			if re.Response.StatusCode < http.StatusInternalServerError {
				return nil, nil, refused(fmt.Errorf("upstream token endpoint refused the code: error %.64q", re.ErrorCode))
			}
			return nil, nil, unavailable(fmt.Errorf("upstream token endpoint unavailable: status %d", re.Response.StatusCode))
		}
		return nil, nil, unavailable(fmt.Errorf("upstream token endpoint unavailable: %w", err))
	}
	id, err := k.identity(ctx, tok, l.Nonce)
	if errors.Is(err, errUnavailable) {
		return nil, nil, unavailable(fmt.Errorf("upstream user-info endpoint unavailable: %w", err))
	}
	if err != nil {
		return nil, nil, refused(fmt.Errorf("upstream identity refused: %w", err))
	}
	return id, tok, nil
}

// errUnavailable marks a failure of the provider (unreachable, slow, 5xx)
// rather than a refusal: the MCP client then gets temporarily_unavailable
// instead of access_denied.
var errUnavailable = errors.New("upstream provider unavailable")

// randomToken returns n random bytes, base64url-encoded.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// truncateLog bounds a peer-chosen value before it is logged.
func truncateLog(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
