package authserver

import (
	"cmp"
	"context"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// sweepInterval is how often expired records are dropped.
const sweepInterval = time.Minute

// Server is the authorization server: an http.Handler serving every
// endpoint under the issuer, plus the well-known metadata URLs. Mount it at
// the root of the issuer's origin. It is safe for concurrent use; Close
// releases the on-disk store.
//
// What it implements:
//
//   - RFC 8414 metadata at the path-inserted well-known URL of the issuer,
//     and the same document as OpenID Connect discovery (both insertion and
//     appending forms for issuers with a path), advertising S256 PKCE, the
//     RFC 9207 iss parameter and Client ID Metadata Documents.
//   - The authorization endpoint (OAuth 2.1 §4.1): code flow only, S256 PKCE
//     required, exact redirect URI matching with only the RFC 8252 loopback
//     port exemption, an HTML error page and no redirect when the client or
//     redirect URI is not trusted, state echoed and iss on every response,
//     RFC 8707 resource indicators validated and bound to the code, scopes
//     validated: each must be in [Config.Scopes] ("scope not supported")
//     and within a pre-registered client's [Client.AllowedScopes] ("scope
//     not allowed for this client"); a request naming none gets the
//     client's [Client.DefaultScopes], else [Config.DefaultScopes].
//   - Consent: automatic, denied, or an HTML page (client name, client_id
//     host, redirect host, localhost-only warning, scopes, resources) bound
//     to the browser by a cookie and a CSRF token, framing forbidden, no
//     script, 303 after the POST. The cookie is "__Host-mcpauth-consent"
//     (Secure) on an https issuer; on a plain-http loopback issuer, where
//     browsers refuse __Host- and Secure, it is "mcpauth-consent", still
//     HttpOnly and SameSite=Strict.
//   - The token endpoint (OAuth 2.1 §3.2): authorization_code (single use,
//     short-lived, bound to client, redirect URI, challenge, resource and
//     scope; a replay revokes what the code produced) and refresh_token
//     (rotation on every use, reuse revokes the family, scope may only
//     narrow, resource honoured), client_credentials for confidential
//     clients, the JWT-bearer grant (RFC 7523) for assertions of
//     [Config.TrustedIssuers] (workload identity tokens; ID-JAGs of
//     Enterprise-Managed Authorization, bound to the presenting client), and
//     with [Config.IdentityProvider] the RFC 8693 token exchange that issues
//     ID-JAGs (typ oauth-id-jag+jwt) as an enterprise IdP; client
//     authentication none, client_secret_basic, client_secret_post and
//     private_key_jwt (RFC 7523 §2.2; keys from the client's jwks or
//     jwks_uri, including a Client ID Metadata Document's, fetched through
//     the SSRF-guarded fetcher, both judged by the one JWK Set rule that
//     refuses a set holding a private or symmetric key; a replayed
//     assertion jti is refused).
//   - DPoP (RFC 9449, [DPoPConfig], off unless configured): a token
//     request with a valid proof gets a token with token_type DPoP and
//     "cnf.jkt"; a public client's
//     grant and refresh tokens are bound to the key; optional server nonces
//     (use_dpop_nonce with DPoP-Nonce); dpop_signing_alg_values_supported in
//     metadata.
//   - RFC 9068 JWT access tokens signed with go-jose (ES256 by default,
//     RS256 and EdDSA), typ at+jwt, aud = the requested resource; a JWK Set
//     endpoint; key rotation with pre-publication.
//   - Clients: pre-registered, RFC 7591 Dynamic Client Registration, and
//     Client ID Metadata Documents through package clientmeta. The scope a
//     client registers itself (DCR "scope", or the document's) is its
//     default, not a ceiling: scopes outside Config.Scopes are dropped (RFC
//     7591 §3.2.1; the registration response carries the effective value)
//     and the client may later ask for any supported scope, as MCP step-up
//     after 403 insufficient_scope requires. Only pre-registered clients
//     may have a ceiling, [Client.AllowedScopes].
//   - RFC 7662 introspection and RFC 7009 revocation.
//   - The device authorization grant (RFC 8628) with [Config.Device]: the
//     device authorization endpoint, a verification page that leads to
//     the same consent page and login as the browser flow, and the
//     device_code grant (see [DeviceConfig]).
//   - Login at an identity provider ([Config.Login], a [Login]; package
//     authserver/upstream has OpenID Connect and GitHub): our consent page
//     before the redirect to the provider, a single-use state bound to the
//     browser (no confused deputy), allow-lists ([AllowList]), grants for
//     the provider's user; the callback is [Server.UpstreamCallbackURL].
//   - Several providers ([Config.Logins], [LoginProvider]): a choice page
//     of ours, home realms by email domain ([Config.HomeRealms]), one
//     callback per provider ([Server.UpstreamCallbackURLFor]) and one user
//     namespace per provider.
//   - A token vault ([Config.Vault], a [Vault]): the provider's tokens of
//     each login stay on the server, sealed, in an [UpstreamTokenStore],
//     bound to the grant the login's code produced. The RFC 8693 token
//     exchange (subject_token_type access_token) hands the user's access
//     token at the provider to the resource server whose identity a
//     pre-registered confidential client is ([Config.VaultResourceServers]),
//     for an MCP access token whose "aud" is that resource, when
//     "audience" names the provider.
//   - Connected third-party accounts ([Config.Connect], [ConnectProvider]):
//     the same token exchange, "audience" a provider's name, answers with
//     the user's token there, or invalid_grant with a connect_uri naming a
//     single-use reference bound to the user, the MCP client and the
//     caller; the connect page signs the browser's user in at the Login,
//     links nothing unless that user is the reference's, and runs the
//     provider's code flow (PKCE, state, iss) bound to that browser.
//   - Tokens for downstream APIs without passthrough
//     ([Config.DownstreamAPIs], [DownstreamAPI]): the same token exchange,
//     with "resource" or "audience" naming a configured API, issues a new
//     RFC 9068 JWT for that API alone ("aud" the API, "sub" the user,
//     "client_id" and RFC 8693 §4.1 "act" the resource server) with the
//     requested scopes that the API accepts and the subject token holds,
//     living the API's TokenTTL (default [DefaultDownstreamTokenTTL]) and
//     never beyond the subject token; the API's resource cannot be asked
//     for at the authorization endpoint. It is a Bearer token, and needs
//     no Login.
//   - A grant policy ([GrantPolicy], [ParseGrantPolicy]) mapping upstream
//     users, groups and email domains to the scopes they may obtain:
//     requested ∩ allowed, access_denied (with iss and state) when nothing
//     or a required scope is refused.
//   - Bounded bodies; rate limits per client address (a separate bucket
//     for the authorization, consent and upstream callback endpoints), per
//     (address, claimed client_id) and, once a confidential client has
//     authenticated, per client ([RateLimit]); behind load balancers the
//     address they forwarded for ([TrustedProxies]);
//     no secret or token in any log or error.
//
// It deliberately does not: authenticate users itself (every grant is for
// [Config.Subject], or for the user of the upstream provider),
// re-evaluate a grant policy per user at refresh (a refresh drops only
// scopes the policy allows nobody), issue ID tokens or implement OpenID
// Connect (the IdP
// role accepts ID tokens of configured providers), support the implicit or
// password grants, "dpop_jkt" authorization requests, pushed authorization
// requests, or pass tokens of a third-party authorization server on.
type Server struct {
	cfg     settings
	clock   clock.Func
	log     *slog.Logger
	store   Storage
	keys    *keyring
	handler http.Handler
	pages   *template.Template
	limits  *rateLimits
	tracer  trace.Tracer // nil without Config.TracerProvider

	login  *loginBroker // nil without Config.Login or Config.Logins
	device *deviceFlow  // nil without Config.Device
	vault  Vault        // nil without Config.Vault
	// keySets are the JWK sets fetched by URL; [Server.Ready] checks the
	// trusted issuers' ones.
	keySets *remoteKeySets
	// connect is the connected accounts of Config.Connect; nil without.
	connect *connector

	// The components of the endpoints, assembled by compose; each holds
	// only what it needs.
	scopes        *scopePolicy
	resources     *resourcePolicy
	clients       *clientRegistry
	tokens        *accessTokens
	token         *tokenEndpoint
	introspection *introspection
	revocation    *revocation
	registration  *registration
	admin         *admin // nil without Config.Admin
	discovery     *discovery

	sweepers  []Sweeper
	lastSweep atomic.Int64
	closeOnce sync.Once
	closers   []io.Closer
}

// New validates cfg and returns a ready server (it generates the first
// signing key if the key store has none); it starts no goroutine. Call
// Close when done.
func New(cfg Config) (*Server, error) {
	st := cfg.withDefaults()
	if err := st.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: st, clock: st.Now, log: cmp.Or(st.Logger, slog.New(slog.DiscardHandler))}
	if st.TracerProvider != nil {
		s.tracer = st.TracerProvider.Tracer(tracerName)
	}
	s.openStorage()
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()
	if err := s.compose(); err != nil {
		return nil, err
	}
	s.pages = pageTemplates()
	s.handler = s.routes()
	s.lastSweep.Store(s.clock.Now().UnixNano())
	ok = true
	return s, nil
}

// validate checks the configuration.
func (st *settings) validate() error {
	policy := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: st.InsecureAllowHTTPLoopback}
	if st.Issuer == "" {
		return configErr("Issuer", "required")
	}
	if err := policy.CheckIssuer(st.Issuer); err != nil {
		return configErr("Issuer", "must be an https URL without query or fragment (http only to loopback with InsecureAllowHTTPLoopback)")
	}
	u, _ := url.Parse(st.Issuer)
	st.issuerPath = strings.TrimSuffix(u.EscapedPath(), "/")
	st.issuerOrigin = u.Scheme + "://" + u.Host
	st.https = u.Scheme == "https"
	if strings.ContainsFunc(st.issuerPath, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~/", c))
	}) {
		return configErr("Issuer", "path may only contain letters, digits and -._~/")
	}
	if !supportedAlgorithm(st.SigningAlgorithm) {
		return configErr("SigningAlgorithm", "must be ES256, RS256 or EdDSA")
	}
	if err := st.validateDurations(); err != nil {
		return err
	}
	if err := st.RateLimit.validate(); err != nil {
		return err
	}
	var err error
	if st.clientAddrs, err = st.TrustedProxies.resolver(); err != nil {
		return err
	}
	if slices.ContainsFunc(st.Scopes, func(sc string) bool { return !oauthmeta.ValidScopeToken(sc) }) {
		return configErr("Scopes", "invalid scope token")
	}
	if !subset(st.DefaultScopes, st.Scopes) {
		return configErr("DefaultScopes", "every default scope must be in Scopes")
	}
	for _, r := range append(slices.Clone(st.Resources), st.DefaultResource) {
		if r != "" && checkResourceSyntax(r) != nil {
			return configErr("Resources", "not an absolute http(s) URI without fragment")
		}
	}
	if st.Consent < ConsentPrompt || st.Consent > ConsentDeny {
		return configErr("Consent", "unknown mode")
	}
	return nil
}

// compose builds the server's components from the configuration, each
// part validated in turn: the clients, the signing keys, the extensions
// (DPoP, client assertions, trusted issuers, the identity provider), the
// upstream login and its vault, the downstream APIs; then it wires the
// endpoints and their grant handlers. It does no I/O but the store's.
func (s *Server) compose() error {
	ctx := context.Background()
	st := &s.cfg
	s.scopes = &scopePolicy{supported: st.Scopes, defaults: st.DefaultScopes}
	keySets := newRemoteKeySets(st.KeyFetch, st.Now)
	s.closers, s.keySets = append(s.closers, keySets), keySets
	s.clients = &clientRegistry{store: s.store.Clients, scopes: s.scopes, keySets: keySets, log: s.log}
	if err := s.clients.preRegister(ctx, st.Clients, s.clock.Now()); err != nil {
		return err
	}
	st.Clients = nil // the plain secrets are not kept
	if err := s.initKeys(); err != nil {
		return err
	}
	var err error
	if s.clients.cimd, err = clientMetadataResolver(st); err != nil {
		return err
	}
	tokenURL := st.endpoint(pathToken)
	dpopProofs, err := newDPoPChecker(st.DPoP, st.Issuer, tokenURL, st.Now, namespaced(st.Replay, "dpop"))
	if err != nil {
		return err
	}
	s.clients.assertions, err = jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{
		Audiences: []string{st.Issuer}, Now: st.Now, Replay: namespaced(st.Replay, "client-assertion"),
	})
	if err != nil {
		return configErr("Issuer", err.Error())
	}
	assertions, err := newJWTGrants(st, tokenURL, keySets, st.Replay)
	if err != nil {
		return err
	}
	idjag, err := newIDJAGExchange(st, s.keys, keySets)
	if err != nil {
		return err
	}
	if s.login, err = newLoginBroker(st); err != nil {
		return err
	}
	if s.vault, err = s.openVault(); err != nil {
		return err
	}
	if s.connect, err = s.openConnect(); err != nil {
		return err
	}
	downstream, err := newDownstreamAPIs(st, s.clients)
	if err != nil {
		return err
	}
	if s.device, err = newDeviceFlow(st.Device, s.clock, st.RateLimit.MaxTracked); err != nil {
		return err
	}

	s.resources = &resourcePolicy{allowed: st.Resources, downstream: downstream,
		urls: oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: st.InsecureAllowHTTPLoopback}}
	s.tokens = &accessTokens{issuer: st.Issuer, keys: s.keys, ttl: st.AccessTokenTTL,
		defaultResource: cmp.Or(st.DefaultResource, st.Issuer)}
	delegated, err := newDelegation(st)
	if err != nil {
		return err
	}
	if delegated != nil {
		s.tokens.mayAct = delegated.cfg.MayAct
	}
	ledger := &grantLedger{grants: s.store.Grants, refresh: s.store.RefreshTokens, tokens: s.tokens, vault: s.vault,
		connect: s.connect, clock: s.clock, accessTTL: st.AccessTokenTTL}
	s.limits = newRateLimits(st.RateLimit, s.clock, st.clientAddrs)
	errs := newErrorWriter(s.log, st.Issuer)
	front := &backChannel{maxBody: st.MaxBodyBytes, limits: s.limits, clients: s.clients, errs: errs}
	s.token = newTokenEndpoint(front, dpopProofs, s.grantRoutes(ledger, assertions, idjag, downstream, delegated)...)
	s.introspection = &introspection{front: front, tokens: s.tokens, grants: s.store.Grants,
		refresh: s.store.RefreshTokens, revocations: s.store.Revocations, issuer: st.Issuer, clock: s.clock}
	s.revocation = &revocation{front: front, tokens: s.tokens, refresh: s.store.RefreshTokens,
		revocations: s.store.Revocations, ledger: ledger, clock: s.clock, log: s.log}
	s.registration = &registration{store: s.store.Clients, scopes: s.scopes, maxBody: st.MaxBodyBytes, errs: errs,
		clock: s.clock, log: s.log}
	if st.Admin != nil {
		if s.admin, err = newAdmin(st.Admin, s.store.Grants); err != nil {
			return err
		}
		s.admin.ledger, s.admin.now, s.admin.log, s.admin.maxBody = ledger, s.clock.Now, s.log, st.MaxBodyBytes
		s.admin.realm = errs.realm
	}
	s.discovery = &discovery{cfg: st, device: s.device != nil, grantTypes: s.token.grantTypes(), grantProfiles: assertions.profiles(),
		dpopAlgorithms: dpopProofs.algorithms(), clientMetadataDocuments: s.clients.cimd != nil, keys: s.keys,
		clock: s.clock}
	return s.discovery.encode()
}

// grantRoutes are the token endpoint's grant handlers, in the order of
// grant_types_supported: the three of OAuth 2.1, then the JWT-bearer
// grant with trusted issuers and the token exchange when any of its
// exchanges is configured.
func (s *Server) grantRoutes(ledger *grantLedger, assertions *jwtGrants, idjag *idjagExchange, downstream downstreamAPIs, delegated *delegation) []grantRoute {
	policy := s.login.currentPolicy
	refresh := &refreshGrant{grants: s.store.Grants, refresh: s.store.RefreshTokens,
		user: oneStepRefresh(s.store.Grants, s.store.RefreshTokens), tokens: s.tokens, ledger: ledger,
		policy: policy, clock: s.clock, log: s.log}
	code := &codeGrant{codes: s.store.Codes, grants: s.store.Grants, ledger: ledger, vault: s.vault, clock: s.clock,
		log: s.log, accessTTL: s.cfg.AccessTokenTTL, refreshTTL: s.cfg.RefreshTokenTTL}
	routes := []grantRoute{
		{grantType: oauthmeta.GrantTypeAuthorizationCode, handler: code},
		{grantType: oauthmeta.GrantTypeRefreshToken, handler: refresh, bound: refresh.boundKey},
		{grantType: oauthmeta.GrantTypeClientCredentials, handler: &clientCredentialsGrant{scopes: s.scopes,
			resources: s.resources, ledger: ledger}},
	}
	if s.device != nil {
		routes = append(routes, grantRoute{grantType: oauthmeta.GrantTypeDeviceCode, handler: &deviceGrant{
			store: s.store.Devices, grants: s.store.Grants, ledger: ledger, clock: s.clock,
			codes: code, accessTTL: s.cfg.AccessTokenTTL, refreshTTL: s.cfg.RefreshTokenTTL}})
	}
	if assertions != nil {
		routes = append(routes, grantRoute{grantType: oauthmeta.GrantTypeJWTBearer, handler: &jwtBearerGrant{
			assertions: assertions, scopes: s.scopes, resources: s.resources, ledger: ledger, log: s.log}})
	}
	exchange := &tokenExchange{idjag: idjag, delegation: delegated}
	access := &accessTokenExchange{tokens: s.tokens, grants: s.store.Grants, revocations: s.store.Revocations,
		vault: s.vault, connect: s.connect, downstream: downstream, policy: policy, clock: s.clock, log: s.log}
	if delegated != nil {
		delegated.tokens, delegated.live, delegated.clients, delegated.workloads = s.tokens, access, s.clients, assertions
		delegated.clock, delegated.log = s.clock, s.log
	}
	if s.login != nil {
		access.upstream = newVaultExchange(&s.cfg, s.login.issuers(), s.vault)
	}
	if access.offered() {
		exchange.access = access
	}
	if exchange.offered() {
		routes = append(routes, grantRoute{grantType: oauthmeta.GrantTypeTokenExchange, handler: exchange, bearer: true,
			proofWhen: wantsDelegation})
	}
	return routes
}

// initKeys loads the signing keys, making the first one if needed.
func (s *Server) initKeys() error {
	s.keys = &keyring{
		alg:         s.cfg.SigningAlgorithm,
		store:       s.store.Keys,
		prePublish:  s.cfg.KeyPrePublish,
		rotateEvery: s.cfg.KeyRotationInterval,
		tokenTTL:    s.cfg.AccessTokenTTL,
		reloadEvery: s.cfg.KeyReloadInterval,
	}
	return s.keys.load(context.Background(), s.clock.Now())
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.maybeSweep(r.Context())
	if err := s.keys.maybeReload(r.Context(), s.clock.Now()); err != nil {
		s.log.WarnContext(r.Context(), "signing keys not reloaded", "err", err)
	}
	s.handler.ServeHTTP(w, r)
}

// Close stops the server's background work (the caches of remote key
// sets). It does not close the [Storage], which the caller opened and
// closes. The server must not be used afterwards. It is safe to call more
// than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		for _, c := range s.closers {
			if cerr := c.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	})
	return err
}

// Issuer returns the issuer identifier.
func (s *Server) Issuer() string { return s.cfg.Issuer }

// UpstreamCallbackURL is the redirect URI to register at the upstream
// provider of [Config.Login]: the issuer followed by /upstream/callback.
// The providers of [Config.Logins] have their own
// ([Server.UpstreamCallbackURLFor]); this one then serves nothing.
func (s *Server) UpstreamCallbackURL() string {
	return strings.TrimSuffix(s.cfg.Issuer, "/") + pathUpstreamCallback
}

// Metadata returns the RFC 8414 document the server publishes.
func (s *Server) Metadata() oauthmeta.AuthServerMetadata { return s.discovery.document() }

// RotateSigningKey schedules a new signing key: it is published in the JWK
// Set at once and signs from KeyPrePublish later; the current key stops
// signing then and stays published until its tokens have expired.
func (s *Server) RotateSigningKey(ctx context.Context) error {
	return s.keys.rotate(ctx, s.clock.Now())
}

// maybeSweep drops expired records at most once per sweepInterval, on the
// request path: the server runs no background goroutine.
func (s *Server) maybeSweep(ctx context.Context) {
	now := s.clock.Now()
	last := s.lastSweep.Load()
	if now.UnixNano()-last < int64(sweepInterval) || !s.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	for _, sw := range s.sweepers {
		if err := sw.Sweep(ctx, now); err != nil {
			s.log.WarnContext(ctx, "sweeping expired records failed", "err", err)
		}
	}
}
