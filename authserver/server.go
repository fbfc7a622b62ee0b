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
type Server struct {
	cfg     settings
	clock   clock.Func
	log     *slog.Logger
	store   Storage
	keys    *keyring
	handler http.Handler
	pages   *template.Template
	limits  *rateLimits

	upstream *upstream     // nil without Config.Upstream
	vault    upstreamVault // nil without Config.TokenVault

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
	s.closers = append(s.closers, keySets)
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
	if s.upstream, err = newUpstream(st); err != nil {
		return err
	}
	if s.upstream != nil {
		s.closers = append(s.closers, s.upstream)
	}
	v, err := newVault(st.TokenVault, s.upstream, s.store.UpstreamTokens, s.clients, s.clock.Now, s.log)
	if err != nil {
		return err
	}
	if v != nil {
		s.vault = v // a nil *vault is no upstreamVault
	}
	downstream, err := newDownstreamAPIs(st, s.clients)
	if err != nil {
		return err
	}

	s.resources = &resourcePolicy{allowed: st.Resources, downstream: downstream,
		urls: oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: st.InsecureAllowHTTPLoopback}}
	s.tokens = &accessTokens{issuer: st.Issuer, keys: s.keys, ttl: st.AccessTokenTTL,
		defaultResource: cmp.Or(st.DefaultResource, st.Issuer)}
	ledger := &grantLedger{grants: s.store.Grants, refresh: s.store.RefreshTokens, tokens: s.tokens, vault: s.vault,
		clock: s.clock, accessTTL: st.AccessTokenTTL}
	s.limits = newRateLimits(st.RateLimit, s.clock, st.clientAddrs)
	errs := newErrorWriter(s.log, st.Issuer)
	front := &backChannel{maxBody: st.MaxBodyBytes, limits: s.limits, clients: s.clients, errs: errs}
	s.token = newTokenEndpoint(front, dpopProofs, s.grantRoutes(ledger, assertions, idjag, downstream)...)
	s.introspection = &introspection{front: front, tokens: s.tokens, grants: s.store.Grants,
		refresh: s.store.RefreshTokens, revocations: s.store.Revocations, issuer: st.Issuer, clock: s.clock}
	s.revocation = &revocation{front: front, tokens: s.tokens, refresh: s.store.RefreshTokens,
		revocations: s.store.Revocations, ledger: ledger, clock: s.clock, log: s.log}
	s.registration = &registration{store: s.store.Clients, scopes: s.scopes, maxBody: st.MaxBodyBytes, errs: errs,
		clock: s.clock, log: s.log}
	s.discovery = &discovery{cfg: st, grantTypes: s.token.grantTypes(), grantProfiles: assertions.profiles(),
		dpopAlgorithms: dpopProofs.algorithms(), clientMetadataDocuments: s.clients.cimd != nil, keys: s.keys,
		clock: s.clock}
	return s.discovery.encode()
}

// grantRoutes are the token endpoint's grant handlers, in the order of
// grant_types_supported: the three of OAuth 2.1, then the JWT-bearer
// grant with trusted issuers and the token exchange when any of its
// exchanges is configured.
func (s *Server) grantRoutes(ledger *grantLedger, assertions *jwtGrants, idjag *idjagExchange, downstream downstreamAPIs) []grantRoute {
	policy := s.upstream.currentPolicy
	refresh := &refreshGrant{grants: s.store.Grants, refresh: s.store.RefreshTokens,
		user: oneStepRefresh(s.store.Grants, s.store.RefreshTokens), tokens: s.tokens, ledger: ledger,
		policy: policy, clock: s.clock, log: s.log}
	routes := []grantRoute{
		{grantType: oauthmeta.GrantTypeAuthorizationCode, handler: &codeGrant{codes: s.store.Codes,
			grants: s.store.Grants, ledger: ledger, vault: s.vault, clock: s.clock, log: s.log,
			accessTTL: s.cfg.AccessTokenTTL, refreshTTL: s.cfg.RefreshTokenTTL}},
		{grantType: oauthmeta.GrantTypeRefreshToken, handler: refresh, bound: refresh.boundKey},
		{grantType: oauthmeta.GrantTypeClientCredentials, handler: &clientCredentialsGrant{scopes: s.scopes,
			resources: s.resources, ledger: ledger}},
	}
	if assertions != nil {
		routes = append(routes, grantRoute{grantType: oauthmeta.GrantTypeJWTBearer, handler: &jwtBearerGrant{
			assertions: assertions, scopes: s.scopes, resources: s.resources, ledger: ledger, log: s.log}})
	}
	exchange := &tokenExchange{idjag: idjag}
	access := &accessTokenExchange{tokens: s.tokens, grants: s.store.Grants, revocations: s.store.Revocations,
		vault: s.vault, downstream: downstream, policy: policy, clock: s.clock, log: s.log}
	if s.upstream != nil {
		access.upstream = newVaultExchange(s.cfg.TokenVault, s.upstream.cfg.Issuer, s.vault)
	}
	if access.offered() {
		exchange.access = access
	}
	if exchange.offered() {
		routes = append(routes, grantRoute{grantType: oauthmeta.GrantTypeTokenExchange, handler: exchange, bearer: true})
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

// Close releases the on-disk store, if any. The server must not be used
// afterwards. It is safe to call more than once.
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
// provider: the issuer followed by /upstream/callback.
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
