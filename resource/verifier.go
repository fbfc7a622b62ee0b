package resource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
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
	profiled     bool // an issuer has a Profile: claims decoded for it
	leeway       time.Duration
	policy       *compiledPolicy
	limits       *limiter     // nil without Config.RateLimit
	tracer       trace.Tracer // nil without Config.TracerProvider
	scanBody     bool         // the policy or the limits need the JSON-RPC body
	cache        *tokenCache
	introspector *introspector
	dpop         *dpopState // nil when DPoP is disabled
	exposeHdrs   string     // Access-Control-Expose-Headers value
	origins      originSet
	sessions     *sessionBinder
	sdkKey       any // go-sdk's context key for its auth.TokenInfo
	audit        func(context.Context, Event)
	logger       *slog.Logger
	clock        clock.Func
	maxToken     int
	maxBody      int64
	metadataTTL  time.Duration
	metadataJSON []byte
	owned        []io.Closer
	closed       atomic.Bool
	insecure     bool // Config.InsecureAllowHTTPLoopback
}

type issuerState struct {
	issuer  string
	keys    keyset.Source
	profile *tokenProfile // nil: RFC 9068
	tenant  string        // the tenant an issuer template was filled with
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
		resource:    res,
		audiences:   map[string]struct{}{res: {}},
		issuers:     map[string]*issuerState{},
		leeway:      cmp.Or(cfg.Leeway, DefaultLeeway),
		audit:       cfg.Audit,
		logger:      cfg.Logger,
		clock:       cfg.Now,
		maxToken:    cmp.Or(cfg.MaxTokenBytes, DefaultMaxTokenBytes),
		maxBody:     cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		metadataTTL: cmp.Or(cfg.MetadataTTL, DefaultMetadataTTL),
		insecure:    cfg.InsecureAllowHTTPLoopback,
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
	v.joseAlgs = jwa.JOSE[jose.SignatureAlgorithm](algs)
	if err := v.setIssuers(&cfg, p); err != nil {
		return nil, err
	}
	if v.policy, err = compilePolicy(cfg.Policy); err != nil {
		return nil, err
	}
	if cfg.TracerProvider != nil {
		v.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	if v.limits, err = newLimiter(cfg.RateLimit); err != nil {
		return nil, err
	}
	v.scanBody = (v.policy != nil && v.policy.needsBody) || (v.limits != nil && v.limits.needsBody)
	if v.cache, err = newTokenCache(cfg.Cache); err != nil {
		return nil, err
	}
	if v.dpop, err = newDPoP(cfg.DPoP, res, cfg.Now); err != nil {
		return nil, err
	}
	v.exposeHdrs = "WWW-Authenticate, " + sessionHeader
	if v.dpop != nil {
		v.exposeHdrs += ", " + dpopNonceHeader
	}
	if v.sessions, err = newSessionBinder(cfg.SessionKey, res); err != nil {
		return nil, err
	}
	v.sdkKey = sdkTokenInfoKey()
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

func (v *Verifier) setIssuers(cfg *Config, p oauthmeta.URLPolicy) error {
	for i, is := range cfg.Issuers {
		var names, tenants []string
		profile, err := compileProfile(is.Profile)
		if err == nil {
			names, tenants, err = issuerNames(is)
		}
		var fe *fieldError
		if errors.As(err, &fe) {
			fe.where = fmt.Sprintf("issuers[%d] (%s): ", i, is.Issuer)
		}
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := p.CheckIssuer(name); err != nil {
				return fmt.Errorf("%w: issuers[%d]: issuer: %w", ErrInvalidConfig, i, err)
			}
			if _, dup := v.issuers[name]; dup {
				return fmt.Errorf("%w: issuers[%d]: issuer %s listed twice", ErrInvalidConfig, i, name)
			}
			v.issuers[name] = nil // reserved: a later duplicate is refused
		}
		keys := is.Keys
		if keys == nil && (len(tenants) == 0 || is.JWKSURI != "") {
			// One key set for the issuer, or for every tenant of a
			// template with a JWK Set URL of its own.
			if keys, err = v.remoteKeys(cfg, names[0], is.JWKSURI, len(tenants) > 0); err != nil {
				return err
			}
		}
		for j, name := range names {
			st := &issuerState{issuer: name, keys: keys, profile: profile}
			if len(tenants) > 0 {
				st.tenant = tenants[j]
				if st.keys == nil { // this tenant's own metadata and keys
					if st.keys, err = v.remoteKeys(cfg, name, "", false); err != nil {
						return err
					}
				}
			}
			v.issuers[name] = st
			v.issuerOrder = append(v.issuerOrder, name)
		}
		v.profiled = v.profiled || profile != nil
	}
	return nil
}

// issuerNames returns the identifiers of is and, for a template, the
// tenants they were filled with.
func issuerNames(is Issuer) (names, tenants []string, err error) {
	if names, err = is.Identifiers(); err != nil || !strings.Contains(is.Issuer, tenantPlaceholder) {
		return names, nil, err
	}
	return names, is.Profile.TenantIDs, nil
}

// remoteKeys creates a RemoteKeys that Close closes: by discovery from
// issuer, or from jwksURI (shared: for every tenant of a template).
func (v *Verifier) remoteKeys(cfg *Config, issuer, jwksURI string, shared bool) (keyset.Source, error) {
	if shared {
		issuer = ""
	}
	rk, err := NewRemoteKeys(RemoteKeysConfig{
		Issuer:                    issuer,
		JWKSURI:                   jwksURI,
		RefetchInterval:           cfg.KeyRefetchInterval,
		TLSConfig:                 cfg.TLSConfig,
		InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback,
		Logger:                    cfg.Logger,
		Now:                       cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	v.owned = append(v.owned, rk)
	return rk, nil
}

func (v *Verifier) setOrigins(allowed []string) error {
	u, _ := url.Parse(v.resource)
	v.origins = originSet{originOf(u): {}}
	for _, o := range allowed {
		c, err := canonicalOrigin(o)
		if err != nil {
			return err
		}
		v.origins[c] = struct{}{}
	}
	return nil
}

// Resource returns the canonical resource identifier the Verifier
// protects.
func (v *Verifier) Resource() string { return v.resource }

// MetadataURL returns the path-inserted RFC 9728 metadata URL, the value of
// resource_metadata in every challenge.
func (v *Verifier) MetadataURL() string { return v.metadataURL }

// tokenShape is what a caller already knows of a token's JWS compact
// shape (jwtverify.LooksLikeJWS), so that a token is scanned once per
// request: the credential parser learns it from its b64token scan.
type tokenShape uint8

const (
	shapeUnknown tokenShape = iota // scanned on a cache miss
	shapeJWS
	shapeOpaque
)

// Verify checks a raw bearer access token (without the "Bearer " prefix)
// and returns the identity it carries. It does not apply the scope policy;
// the middleware does, per operation. A DPoP-bound token is refused with
// [ErrInvalidToken] in every mode (reason "sender-constrained token
// presented as bearer"): without the request, its proof cannot be checked
// (the middleware does that). Errors match one of [ErrInvalidToken] or
// [ErrUnavailable], are an [*Error] whose Reason is specific (such as
// "token expired"), and never contain the token. The result is the
// caller's own copy.
func (v *Verifier) Verify(ctx context.Context, raw string) (*TokenInfo, error) {
	av, err := v.verify(ctx, raw, schemeBearer, shapeUnknown)
	if err != nil {
		return nil, err
	}
	return av.info.clone(), nil
}

// verify checks raw as a token presented with scheme. The token checks
// are the same for both schemes and their result is cached; which scheme
// may present which token (bound or not) is decided on every call by
// checkScheme, so a cached DPoP-bound token never passes as a bearer
// token. The DPoP proof itself is the middleware's to check, per request.
// On a scheme error the verified value is returned too, for the audit.
func (v *Verifier) verify(ctx context.Context, raw, scheme string, shape tokenShape) (*authValue, error) {
	if v.closed.Load() {
		return nil, errVerifierClosed
	}
	if len(raw) > v.maxToken {
		return nil, errTokenTooLarge
	}
	if raw == "" {
		return nil, errMalformedToken
	}
	now := v.clock.Now()
	cached, hash := v.cache.lookup(raw, now)
	if cached != nil {
		return cached, v.checkScheme(cached, scheme)
	}
	if shape == shapeOpaque || shape == shapeUnknown && !jwtverify.LooksLikeJWS(raw) {
		if v.introspector == nil {
			return nil, errUnsupportedToken
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
// with a "cnf" claim never passes with the Bearer scheme, and the
// DPoP scheme needs a token bound to a key thumbprint (cnf.jkt).
func (v *Verifier) checkScheme(av *authValue, scheme string) error {
	if scheme == schemeDPoP {
		if av.info.JKT == "" {
			return errDPoPUnboundToken
		}
		return nil
	}
	if av.bound {
		return errBoundToken
	}
	return nil
}

// Close stops the background work of the key sets New created (those of
// issuers configured without Keys). Verify fails with [ErrUnavailable]
// (reason "verifier closed") afterwards. It is safe to call more than once.
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
