package authserver

import (
	"cmp"
	"context"
	"crypto"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/safehttp"
)

// Limits and defaults of the upstream login.
const (
	// DefaultUpstreamGroupsClaim is the ID token claim read for groups when
	// [UpstreamConfig.GroupsClaim] is empty.
	DefaultUpstreamGroupsClaim = "groups"
	// upstreamLoginTTL is how long an upstream state stays redeemable:
	// logins in progress are kept in the PendingStore, whose stores expect
	// the consent page's lifetime.
	upstreamLoginTTL = PendingTTL
	// upstreamMetadataTTL is how long discovery and keys are reused.
	upstreamMetadataTTL = time.Hour
	// DefaultUpstreamTimeout bounds each call to the provider when
	// [UpstreamConfig.Timeout] is zero.
	DefaultUpstreamTimeout = 10 * time.Second
	// upstreamPathCallback is the fixed redirect URI path under the issuer.
	pathUpstreamCallback = "/upstream/callback"
)

// UpstreamConfig makes the server log users in at an OpenID Connect
// provider (Okta, Keycloak, Auth0, Google, Entra, ...), or at a plain
// OAuth 2.0 provider such as GitHub ([OAuth2Provider]), instead of issuing
// every grant for the fixed [Config.Subject]. The provider is found by
// discovery (OpenID Connect Discovery 1.0) from Issuer; the login is the
// authorization code flow with PKCE S256, "state" and "nonce"; the ID
// token is verified (signature against the provider's JWK Set, "iss",
// "aud", "azp", "exp", "nonce"). The server then issues its own codes and
// tokens to MCP clients exactly as without an upstream, for the subject
// [UpstreamSubject] of the provider's (issuer, sub).
//
// Register [Server.UpstreamCallbackURL] as the redirect URI of the client
// at the provider. [UpstreamPreset] fills the provider-specific fields for
// GitHub, Google and Microsoft Entra ID.
type UpstreamConfig struct {
	// Issuer is the provider's issuer identifier: https, or http to a
	// loopback address when Fetch.InsecureAllowHTTPLoopback is set. Required.
	// With OAuth2 set it is never fetched: it names the provider (GitHub:
	// "https://github.com") in [UpstreamSubject], so changing it changes
	// every user's subject.
	Issuer string
	// OAuth2, when set, makes the provider a plain OAuth 2.0 one at these
	// endpoints, without discovery or ID token: the user comes from its
	// user-info endpoint. Nil means OpenID Connect, found by discovery from
	// Issuer.
	OAuth2 *OAuth2Provider
	// ClientID and ClientSecret are this server's credentials at the
	// provider (client_secret_basic, or client_secret_post when the
	// provider supports only that). ClientID is required; with neither
	// ClientSecret nor ClientKey this server is a public client there
	// (PKCE only).
	ClientID, ClientSecret string
	// ClientKey, instead of ClientSecret, authenticates this server with
	// private_key_jwt (RFC 7523 §2.2): a fresh assertion per token
	// request, "aud" the provider's issuer, typ "JWT", signed with this key
	// (ECDSA, RSA of 2048 bits or more, or Ed25519) under ClientKeyID
	// ("kid", may be empty). Register its public key at the provider.
	ClientKey   crypto.Signer
	ClientKeyID string
	// Scopes requested from the provider. For OpenID Connect "openid" is
	// always sent, and empty means "openid email profile"; with OAuth2,
	// exactly these are sent (GitHub: "read:user user:email"), and empty
	// means no scope parameter.
	Scopes []string
	// GroupsClaim is the ID token claim (with OAuth2, the user-info member)
	// holding the user's groups (an array of strings, or one string). Empty
	// means [DefaultUpstreamGroupsClaim].
	GroupsClaim string
	// Allow says who may log in. With an upstream configured, an empty
	// allow-list is a configuration error unless Allow.AllowAnyUser is set.
	Allow AllowList
	// GrantPolicy, when set, says which of the requested MCP scopes each
	// admitted user may obtain (see [GrantPolicy]). Nil means every scope
	// the client may request, as without an upstream.
	GrantPolicy *GrantPolicy
	// Fetch configures the calls to the provider (discovery, JWK Set, token
	// endpoint): the SSRF-guarded fetcher, https to public addresses unless
	// InsecureAllowHTTPLoopback. Its MaxSets is ignored.
	Fetch KeyFetchConfig
	// Timeout bounds each call to the provider, connect to last byte; the
	// user gets an error page when it passes. It also bounds an upstream
	// token refresh of the [Config.TokenVault], whose refresh lease lasts
	// twice Timeout. Zero means [DefaultUpstreamTimeout].
	Timeout time.Duration
}

// UpstreamIdentity is a user as the upstream provider's ID token describes
// them.
type UpstreamIdentity struct {
	// Issuer and Subject are the provider's "iss" and "sub": together they
	// identify the user.
	Issuer, Subject string
	// Email, EmailVerified and Name are the standard claims, when present.
	Email         string
	EmailVerified bool
	Name          string
	// Groups is the configured groups claim.
	Groups []string
}

// upstream is the configured provider: its discovered metadata and keys,
// cached. Logins in progress live in the PendingStore.
type upstream struct {
	cfg     UpstreamConfig
	scopes  []string
	fetcher *safehttp.Fetcher
	now     func() time.Time
	// assertions signs private_key_jwt assertions; nil with a secret.
	assertions *jwtassert.ClientAssertionSigner
	// For a plain OAuth 2.0 provider (cfg.OAuth2): its fixed metadata, the
	// token endpoint's client asking for JSON, and the user-info fetcher
	// (64 KiB cap, no redirects). Nil for OpenID Connect.
	oauthMeta       *providerMetadata
	acceptJSON      *http.Client
	userInfoFetcher *safehttp.Fetcher
	allow           *allowRules
	policy          *compiledGrantPolicy // nil without a GrantPolicy

	timeout time.Duration

	// discovery runs one fetch of the metadata at a time, shared by every
	// login that needs it meanwhile; each stops waiting when its own
	// request ends, so a hanging provider never queues logins behind one
	// another.
	discovery singleflight.Group

	mu      sync.Mutex // guards the fields below
	meta    *providerMetadata
	metaAt  time.Time
	keys    keySource // nil until discovery
	keysURI string
	closed  bool // after Close, discovery sets up no key source
}

// upstreamLogin is an authorization request sent to the provider, as
// taken back from the PendingStore at the callback.
type upstreamLogin struct {
	req *authRequest
	PendingUpstreamLogin
}

// providerMetadata is the part of the OpenID provider metadata used here.
type providerMetadata struct {
	Issuer                   string   `json:"issuer"`
	AuthorizationEndpoint    string   `json:"authorization_endpoint"`
	TokenEndpoint            string   `json:"token_endpoint"`
	JWKSURI                  string   `json:"jwks_uri"`
	CodeChallengeMethods     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	AuthorizationResponseIss bool     `json:"authorization_response_iss_parameter_supported"`
}

// newUpstream validates cfg.Upstream and returns the upstream login, nil
// without one. It does no I/O: discovery happens at the first login.
func newUpstream(cfg *settings) (*upstream, error) {
	c := cfg.Upstream
	if c == nil {
		return nil, nil
	}
	now := clock.Func(cfg.Now).Now
	switch {
	case c.Issuer == "" || c.ClientID == "":
		return nil, configErr("Upstream", "Issuer and ClientID are required")
	case c.Allow.empty() && !c.Allow.AllowAnyUser:
		return nil, configErr("Upstream.Allow", "name the email domains, users or groups who may log in, or set AllowAnyUser")
	case c.ClientSecret != "" && c.ClientKey != nil:
		return nil, configErr("Upstream", "set ClientSecret or ClientKey, not both")
	case c.Timeout < 0:
		return nil, configErr("Upstream.Timeout", "must not be negative")
	case cfg.Consent == ConsentAuto:
		return nil, configErr("Consent", "must show the consent page (or deny) when users log in upstream")
	}
	opts := safehttp.Options{
		TLSConfig: c.Fetch.TLSConfig, InsecureAllowHTTPLoopback: c.Fetch.InsecureAllowHTTPLoopback,
		Timeout: cmp.Or(c.Timeout, DefaultUpstreamTimeout), MaxBytes: jwkset.MaxSize,
	}
	nethook.Of(&c.Fetch).Apply(&opts)
	f := safehttp.New(opts)
	iss, err := url.Parse(c.Issuer)
	if err != nil || iss.RawQuery != "" || iss.Fragment != "" || f.CheckURL(c.Issuer) != nil {
		return nil, configErr("Upstream.Issuer", "must be an https URL without query or fragment (http only to loopback with Fetch.InsecureAllowHTTPLoopback)")
	}
	allow, err := compileAllowList(&c.Allow)
	if err != nil {
		return nil, err
	}
	policy, err := compileGrantPolicy(c.GrantPolicy, cfg.Scopes)
	if err != nil {
		return nil, err
	}
	var assertions *jwtassert.ClientAssertionSigner
	if c.ClientKey != nil {
		assertions, err = jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
			ClientID: c.ClientID, Key: c.ClientKey, KeyID: c.ClientKeyID, Type: "JWT", Now: now,
		})
		if err != nil {
			return nil, configErr("Upstream.ClientKey", err.Error())
		}
	}
	u := &upstream{assertions: assertions, allow: allow, policy: policy,
		cfg: *c, scopes: upstreamScopes(c), fetcher: f, now: now, timeout: opts.Timeout,
	}
	u.cfg.GroupsClaim = cmp.Or(c.GroupsClaim, DefaultUpstreamGroupsClaim)
	if c.OAuth2 != nil {
		if err := u.initOAuth2(opts); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// upstreamScopes are the scopes requested from the provider.
func upstreamScopes(c *UpstreamConfig) []string {
	var scopes []string
	requested := c.Scopes
	if c.OAuth2 == nil {
		scopes = []string{"openid"}
		if len(requested) == 0 {
			requested = []string{"email", "profile"}
		}
	}
	return appendNew(scopes, requested...)
}

// metadata returns the provider metadata, fetching it when missing or
// older than upstreamMetadataTTL. A failed fetch is not cached.
func (u *upstream) metadata(ctx context.Context) (*providerMetadata, error) {
	if u.oauthMeta != nil {
		return u.oauthMeta, nil
	}
	u.mu.Lock()
	m, at := u.meta, u.metaAt
	u.mu.Unlock()
	if m != nil && u.now().Sub(at) < upstreamMetadataTTL {
		return m, nil
	}
	// The shared fetch outlives any one caller's cancellation; the
	// fetcher's timeout bounds it.
	shared := context.WithoutCancel(ctx)
	m, err := flight.Do(ctx, &u.discovery, "", func() (*providerMetadata, error) { return u.discover(shared) })
	if err != nil && err == ctx.Err() {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	return m, err
}

// discover fetches and checks the metadata and points the key source at
// its jwks_uri.
func (u *upstream) discover(ctx context.Context) (*providerMetadata, error) {
	wk := strings.TrimSuffix(u.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	resp, err := u.fetcher.Get(ctx, wk, "application/json")
	if err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	var m providerMetadata
	if err := jsonx.DecodeObject(resp.Body, &m); err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	if err := u.checkMetadata(&m); err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.useJWKSURI(m.JWKSURI); err != nil {
		return nil, fmt.Errorf("upstream discovery: jwks_uri: %w", err)
	}
	u.meta, u.metaAt = &m, u.now()
	return &m, nil
}

// checkMetadata applies OpenID Connect Discovery §4.3 (the issuer must be
// the configured one, exactly) and the fetcher's URL rules to every
// endpoint.
func (u *upstream) checkMetadata(m *providerMetadata) error {
	if m.Issuer != u.cfg.Issuer {
		return fmt.Errorf("issuer %q does not match the configured issuer", m.Issuer)
	}
	for name, v := range map[string]string{
		"authorization_endpoint": m.AuthorizationEndpoint, "token_endpoint": m.TokenEndpoint, "jwks_uri": m.JWKSURI,
	} {
		if v == "" {
			return fmt.Errorf("%s is missing", name)
		}
		if err := u.fetcher.CheckURL(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(m.CodeChallengeMethods) > 0 && !slices.Contains(m.CodeChallengeMethods, "S256") {
		return fmt.Errorf("the provider does not support PKCE S256")
	}
	return nil
}

// oauth2Config is the x/oauth2 configuration for the provider's endpoints.
func (u *upstream) oauth2Config(m *providerMetadata, redirectURI string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if ms := m.TokenEndpointAuthMethods; u.assertions != nil || u.cfg.ClientSecret == "" ||
		(len(ms) > 0 && !slices.Contains(ms, "client_secret_basic") && slices.Contains(ms, "client_secret_post")) {
		style = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{
		ClientID: u.cfg.ClientID, ClientSecret: u.cfg.ClientSecret, RedirectURL: redirectURI, Scopes: u.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint, TokenURL: m.TokenEndpoint, AuthStyle: style},
	}
}
