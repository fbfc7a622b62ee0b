package authserver

import (
	"cmp"
	"context"
	"encoding/json"
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

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/dpop"
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
	cfg             settings
	clock           clock.Func
	log             *slog.Logger
	store           Storage
	keys            *keyring
	cimd            *clientmeta.Resolver
	handler         http.Handler
	pages           *template.Template
	limits          *rateLimits
	metadata        []byte // the RFC 8414 document, encoded once
	defaultResource string
	realm           string

	dpop       *dpop.Verifier // nil when DPoP is disabled
	assertions *jwtassert.ClientAssertionVerifier
	clientKeys *remoteKeySets
	grants     *jwtGrants // nil without TrustedIssuers
	idp        *identityProvider
	upstream   *upstream // nil without Config.Upstream
	vault      *vault    // nil without Config.TokenVault
	downstream downstreamAPIs

	// static are the pre-registered clients, from the configuration: every
	// replica has them, so their lookups need no store read.
	static map[string]*Client

	sweepers  []Sweeper
	lastSweep atomic.Int64
	closeOnce sync.Once
	closers   []io.Closer
}

// New validates cfg and returns a ready server. It opens cfg.DataDir when
// set (and generates the first signing key if there is none); it starts no
// goroutine. Call Close when done.
func New(cfg Config) (*Server, error) {
	st := cfg.withDefaults()
	if err := st.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: st, clock: st.Now, log: cmp.Or(st.Logger, slog.New(slog.DiscardHandler))}
	if err := s.openStorage(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()
	for _, step := range []func() error{
		s.initClients, s.initKeys, s.initResolver, s.initExtensions, s.initUpstream, s.initVault, s.initDownstream,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s.defaultResource = cmp.Or(st.DefaultResource, st.Issuer)
	s.realm = strings.NewReplacer(`"`, "", `\`, "").Replace(st.Issuer)
	s.limits = newRateLimits(st.RateLimit)
	m := s.Metadata()
	var err error
	if s.metadata, err = json.Marshal(&m); err != nil {
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

// initClients hashes and stores the pre-registered clients.
func (s *Server) initClients() error {
	ctx := context.Background()
	s.static = make(map[string]*Client, len(s.cfg.Clients))
	for i := range s.cfg.Clients {
		c, err := staticClient(&s.cfg.Clients[i], s.cfg.Scopes, s.clock.Now())
		if err != nil {
			return err
		}
		if err := s.store.Clients.SaveClient(ctx, c); err != nil {
			return err
		}
		s.static[c.ID] = c
	}
	s.cfg.Clients = nil // the plain secrets are not kept
	return nil
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

func (s *Server) initResolver() error {
	if s.cfg.DisableClientIDMetadataDocuments {
		return nil
	}
	if s.cfg.ClientMetadata != nil {
		s.cimd = s.cfg.ClientMetadata
		return nil
	}
	r, err := clientmeta.NewResolver(clientmeta.ResolverConfig{Now: s.cfg.Now})
	if err != nil {
		return err
	}
	s.cimd = r
	return nil
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
