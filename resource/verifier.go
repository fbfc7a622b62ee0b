package resource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Verifier protects one MCP endpoint: it verifies access tokens
// ([Verifier.Verify]), wraps handlers ([Verifier.Middleware]) and serves
// the matching RFC 9728 metadata ([Verifier.MetadataHandler]), all from one
// [Config], so the challenges and the metadata cannot disagree. It is safe
// for concurrent use. Call [Verifier.Close] when done, to stop the key
// refreshes of key sets it created.
type Verifier struct {
	resource     string
	metadataURL  string
	audiences    map[string]struct{}
	issuers      map[string]*issuerState
	issuerOrder  []string
	joseAlgs     []jose.SignatureAlgorithm
	allowJWTType bool
	leeway       time.Duration
	policy       *compiledPolicy
	cache        *tokenCache
	introspector *introspector
	dpop         *dpopState // nil when DPoP is disabled
	exposeHdrs   string     // Access-Control-Expose-Headers value
	origins      map[string]struct{}
	audit        func(context.Context, Event)
	logger       *slog.Logger
	clock        func() time.Time
	maxToken     int
	maxBody      int64
	metadataTTL  time.Duration
	metadataJSON []byte
	owned        []io.Closer
	closed       atomic.Bool
	insecure     bool // Config.InsecureAllowLoopback
}

type issuerState struct {
	issuer string
	keys   KeySource
}

// New validates cfg and returns a Verifier. It performs no I/O and starts
// no goroutines: keys are fetched on first use. Every configuration error
// wraps [ErrInvalidConfig].
func New(cfg Config) (*Verifier, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := cfg.urlPolicy()
	res, err := canonicalResource(cfg.Resource, p)
	if err != nil {
		return nil, err
	}
	v := &Verifier{
		resource:     res,
		audiences:    map[string]struct{}{res: {}},
		issuers:      map[string]*issuerState{},
		allowJWTType: cfg.InsecureAllowJWTType,
		leeway:       orDefault(cfg.Leeway, DefaultLeeway),
		audit:        cfg.Audit,
		logger:       cfg.Logger,
		clock:        cfg.Now,
		maxToken:     orDefault(cfg.MaxTokenBytes, DefaultMaxTokenBytes),
		maxBody:      orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		metadataTTL:  orDefault(cfg.MetadataTTL, DefaultMetadataTTL),
		insecure:     cfg.InsecureAllowLoopback,
	}
	if v.metadataURL, err = oauthmeta.ProtectedResourceMetadataURL(res); err != nil {
		return nil, fmt.Errorf("%w: resource: %w", ErrInvalidConfig, err)
	}
	for _, a := range cfg.AudienceAliases {
		c, err := oauthmeta.CanonicalResource(a)
		if err != nil {
			return nil, fmt.Errorf("%w: audience alias: %w", ErrInvalidConfig, err)
		}
		v.audiences[c] = struct{}{}
	}
	algs, err := checkAlgorithms(cfg.Algorithms)
	if err != nil {
		return nil, err
	}
	for _, a := range algs {
		v.joseAlgs = append(v.joseAlgs, jose.SignatureAlgorithm(a))
	}
	if err := v.setIssuers(&cfg, p); err != nil {
		return nil, err
	}
	if v.policy, err = compilePolicy(cfg.Policy); err != nil {
		return nil, err
	}
	if v.cache, err = newTokenCache(cfg.Cache); err != nil {
		return nil, err
	}
	if v.dpop, err = newDPoP(cfg.DPoP, res, cfg.Now); err != nil {
		return nil, err
	}
	v.exposeHdrs = "WWW-Authenticate"
	if v.dpop != nil {
		v.exposeHdrs = "WWW-Authenticate, " + dpopNonceHeader
	}
	if cfg.Introspection != nil {
		if v.introspector, err = newIntrospector(*cfg.Introspection, v); err != nil {
			return nil, err
		}
	}
	if err := v.setOrigins(cfg.AllowedOrigins); err != nil {
		return nil, err
	}
	if err := v.buildMetadata(&cfg); err != nil {
		return nil, err
	}
	return v, nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (v *Verifier) setIssuers(cfg *Config, p oauthmeta.URLPolicy) error {
	for _, is := range cfg.Issuers {
		if err := p.CheckIssuer(is.Issuer); err != nil {
			return fmt.Errorf("%w: issuer: %w", ErrInvalidConfig, err)
		}
		if _, dup := v.issuers[is.Issuer]; dup {
			return fmt.Errorf("%w: issuer listed twice", ErrInvalidConfig)
		}
		keys := is.Keys
		if keys == nil {
			rk, err := NewRemoteKeys(RemoteKeysConfig{
				Issuer:                is.Issuer,
				JWKSURI:               is.JWKSURI,
				RefetchInterval:       cfg.KeyRefetchInterval,
				TLSConfig:             cfg.TLSConfig,
				InsecureAllowLoopback: cfg.InsecureAllowLoopback,
				Logger:                cfg.Logger,
				Now:                   cfg.Now,
			})
			if err != nil {
				return err
			}
			keys = rk
			v.owned = append(v.owned, rk)
		}
		v.issuers[is.Issuer] = &issuerState{issuer: is.Issuer, keys: keys}
		v.issuerOrder = append(v.issuerOrder, is.Issuer)
	}
	return nil
}

func (v *Verifier) setOrigins(allowed []string) error {
	u, _ := url.Parse(v.resource)
	v.origins = map[string]struct{}{originOf(u): {}}
	for _, o := range allowed {
		c, err := canonicalOrigin(o)
		if err != nil {
			return err
		}
		v.origins[c] = struct{}{}
	}
	return nil
}

// now reads the configured clock.
func (v *Verifier) now() time.Time {
	if v.clock != nil {
		return v.clock()
	}
	return time.Now()
}

// Resource returns the canonical resource identifier the Verifier
// protects.
func (v *Verifier) Resource() string { return v.resource }

// MetadataURL returns the path-inserted RFC 9728 metadata URL, the value of
// resource_metadata in every challenge.
func (v *Verifier) MetadataURL() string { return v.metadataURL }

// Verify checks a raw bearer access token (without the "Bearer " prefix)
// and returns the identity it carries. It does not apply the scope policy;
// the middleware does, per operation. A DPoP-bound token is refused with
// [ErrBoundToken] in every mode: without the request, its proof cannot be
// checked (the middleware does that). Errors match one of
// [ErrInvalidToken] (with a specific reason such as [ErrExpired]) or
// [ErrUnavailable], and never contain the token.
func (v *Verifier) Verify(ctx context.Context, raw string) (*TokenInfo, error) {
	av, err := v.verify(ctx, raw, schemeBearer, shapeUnchecked)
	if err != nil {
		return nil, err
	}
	return av.info, nil
}

// verify checks raw as a token presented with scheme. The token checks
// are the same for both schemes and their result is cached; which scheme
// may present which token (bound or not) is decided on every call by
// checkScheme, so a cached DPoP-bound token never passes as a bearer
// token. The DPoP proof itself is the middleware's to check, per request.
// On a scheme error the verified value is returned too, for the audit.
// shape is what the caller already knows of raw's JWS compact shape
// (shapeUnchecked: nothing; raw is then scanned on a cache miss).
func (v *Verifier) verify(ctx context.Context, raw, scheme string, shape tokenShape) (*authValue, error) {
	if v.closed.Load() {
		return nil, ErrVerifierClosed
	}
	if len(raw) > v.maxToken {
		return nil, ErrTokenTooLarge
	}
	if raw == "" {
		return nil, ErrMalformedToken
	}
	now := v.now()
	cached, hash := v.cache.lookup(raw, now)
	if cached != nil {
		return cached, v.checkScheme(cached, scheme)
	}
	if !shape.isJWS(raw) {
		if v.introspector == nil {
			return nil, ErrUnsupportedToken
		}
		av, err := v.introspector.introspect(ctx, raw, now)
		if err != nil {
			return nil, err
		}
		return av, v.checkScheme(av, scheme)
	}
	av := newAuthValue(raw)
	if err := v.verifyJWT(ctx, raw, now, av, scheme); err != nil {
		return nil, err
	}
	v.cache.putHashed(av, hash, av.info.Expiry, now)
	return av, v.checkScheme(av, scheme)
}

// checkScheme applies RFC 9449 §7.1 and §7.2 to a verified token: a token
// with a "cnf" claim never passes with the Bearer scheme (RS-18), and the
// DPoP scheme needs a token bound to a key thumbprint (cnf.jkt).
func (v *Verifier) checkScheme(av *authValue, scheme string) error {
	if scheme == schemeDPoP {
		if av.info.JKT == "" {
			return ErrDPoPUnboundToken
		}
		return nil
	}
	if av.bound {
		return ErrBoundToken
	}
	return nil
}

// Close stops the background work of the key sets New created (those of
// issuers configured without Keys). Verify fails with [ErrVerifierClosed]
// afterwards. It is safe to call more than once.
func (v *Verifier) Close() error {
	if v.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, c := range v.owned {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
