package clientmeta

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults for zero-valued [ResolverConfig] fields.
const (
	// DefaultMaxBytes is the document size cap (CIMD §6.6 suggests 5 KB).
	DefaultMaxBytes = 5 << 10
	// DefaultTimeout bounds one fetch, connect to last byte.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxTTL is the longest a document is cached, whatever its
	// headers say (SEP-991).
	DefaultMaxTTL = 24 * time.Hour
	// DefaultTTL is how long a document without cache headers is reused.
	DefaultTTL = 5 * time.Minute
	// DefaultMaxEntries bounds the number of cached documents.
	DefaultMaxEntries = 1024
)

// LoopbackMapping makes client_ids that start with ClientIDPrefix be fetched
// from FetchPrefix on this machine instead: the rest of the client_id is
// appended to FetchPrefix. The document must still carry the original https
// client_id. It exists so a client under development can host its document
// on http://127.0.0.1 while presenting a production-shaped identifier.
type LoopbackMapping struct {
	// ClientIDPrefix is an https URL prefix ending in "/", such as
	// "https://client.example/".
	ClientIDPrefix string
	// FetchPrefix is an http or https URL on a loopback address or
	// "localhost", ending in "/", such as "http://127.0.0.1:8080/".
	FetchPrefix string
}

// ResolverConfig configures a [Resolver]. The zero value is the strict
// production configuration: every https host may be tried, fetches go only
// to public addresses over https, without redirects, 5 KB, 5 s, and
// documents are cached as their headers say for at most 24 h.
type ResolverConfig struct {
	// TrustPolicy runs before the cache and before any fetch. Nil admits
	// every client_id that passes the URL rules.
	TrustPolicy TrustPolicy
	// Timeout bounds one fetch. Zero means [DefaultTimeout].
	Timeout time.Duration
	// MaxBytes caps a document. Zero means [DefaultMaxBytes].
	MaxBytes int64
	// MaxTTL clamps the cache lifetime. Zero means [DefaultMaxTTL].
	MaxTTL time.Duration
	// DefaultTTL is the lifetime of a document whose response has neither
	// Cache-Control max-age nor Expires. Zero means [DefaultTTL]; a
	// negative value means such documents are not cached.
	DefaultTTL time.Duration
	// MaxEntries bounds the cache. Zero means [DefaultMaxEntries].
	MaxEntries int
	// TLSConfig is the client TLS configuration. Nil means the system roots.
	TLSConfig *tls.Config
	// UserAgent is sent with every fetch. Empty means "mcpauth".
	UserAgent string
	// InsecureLoopbackMappings redirects matching client_ids to a loopback
	// origin for local testing (see [LoopbackMapping]). Empty (the default)
	// means none: every fetch goes to the client_id URL itself and loopback
	// addresses are refused.
	InsecureLoopbackMappings []LoopbackMapping
	// Now is the clock. Nil means time.Now.
	Now func() time.Time

	// net is the tests' resolver and dial function (internal/nethook), reached
	// through nethook.Set and nethook.Of.
	netHook
}

// Resolver fetches, validates and caches Client ID Metadata Documents for
// an authorization server, treating every client_id URL as hostile input.
// It is safe for concurrent use; simultaneous misses for one client_id
// share one fetch. Constructing one does no I/O and starts no goroutine.
type Resolver struct {
	cfg      ResolverConfig
	strict   *safehttp.Fetcher
	loopback *safehttp.Fetcher             // nil unless mappings are configured
	cache    *lru.Cache[string, *Document] // valid documents only
	flight   singleflight.Group
}

// NewResolver validates cfg and returns a Resolver.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, DefaultMaxBytes)
	cfg.MaxTTL = cmp.Or(cfg.MaxTTL, DefaultMaxTTL)
	cfg.DefaultTTL = cmp.Or(cfg.DefaultTTL, DefaultTTL)
	cfg.MaxEntries = cmp.Or(cfg.MaxEntries, DefaultMaxEntries)
	if cfg.Timeout < 0 || cfg.MaxBytes < 0 || cfg.MaxTTL < 0 || cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrConfig)
	}
	for _, m := range cfg.InsecureLoopbackMappings {
		if err := m.validate(); err != nil {
			return nil, err
		}
	}
	cfg.InsecureLoopbackMappings = slices.Clone(cfg.InsecureLoopbackMappings)
	opts := safehttp.Options{
		TLSConfig: cfg.TLSConfig,
		MaxBytes:  cfg.MaxBytes,
		Timeout:   cfg.Timeout,
		UserAgent: cfg.UserAgent,
	}
	nethook.Of(&cfg).Apply(&opts)
	r := &Resolver{
		cfg:    cfg,
		strict: safehttp.New(opts),
		cache:  lru.New[string, *Document](cfg.MaxEntries, cfg.Now, nil),
	}
	if len(cfg.InsecureLoopbackMappings) > 0 {
		opts.InsecureAllowHTTPLoopback = true
		r.loopback = safehttp.New(opts)
	}
	return r, nil
}

func (m LoopbackMapping) validate() error {
	p, err := url.Parse(m.ClientIDPrefix)
	if err != nil || p.Scheme != "https" || p.Host == "" || !strings.HasSuffix(m.ClientIDPrefix, "/") {
		return fmt.Errorf("%w: loopback mapping: ClientIDPrefix must be an https URL ending in /", ErrConfig)
	}
	f, err := url.Parse(m.FetchPrefix)
	if err != nil || (f.Scheme != "http" && f.Scheme != "https") || !oauthmeta.IsLoopbackHost(f.Hostname()) ||
		!strings.HasSuffix(m.FetchPrefix, "/") || f.User != nil || f.RawQuery != "" || f.Fragment != "" {
		return fmt.Errorf("%w: loopback mapping: FetchPrefix must be a loopback http(s) URL ending in /", ErrConfig)
	}
	return nil
}

// Resolve returns the validated document for clientID. In order: the
// client_id URL rules ([ValidateClientID]), the trust policy, the cache,
// then one fetch whose document must pass [ParseDocument] against
// clientID. The fetch is https only, refuses special-use addresses at dial
// time, follows no redirect and accepts only a 200 with a JSON content
// type within ResolverConfig.MaxBytes and Timeout (5 KB and 5 s by
// default). Valid documents are cached as their HTTP cache headers say,
// for at most ResolverConfig.MaxTTL; failures are never cached. The
// returned document is the caller's to modify.
func (r *Resolver) Resolve(ctx context.Context, clientID string) (*Document, error) {
	u, err := parseClientID(clientID)
	if err != nil {
		return nil, err
	}
	if r.cfg.TrustPolicy != nil {
		if perr := r.cfg.TrustPolicy.AllowClientID(ctx, u); perr != nil {
			return nil, fmt.Errorf("%w: %w", ErrUntrusted, perr)
		}
	}
	if doc, ok := r.cache.Get(clientID); ok {
		return doc.clone(), nil
	}
	// The fetch is shared by every caller waiting on clientID, so it runs
	// detached from this caller's cancellation, bounded by the fetcher's
	// own timeout; each caller still stops waiting when its ctx ends.
	shared := context.WithoutCancel(ctx)
	doc, err := flight.Do(ctx, &r.flight, clientID, func() (*Document, error) { return r.fetch(shared, clientID) })
	switch {
	case err != nil && err == ctx.Err():
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	case err != nil:
		return nil, err
	}
	return doc.clone(), nil
}

// Forget drops clientID from the cache, so the next Resolve fetches again.
func (r *Resolver) Forget(clientID string) { r.cache.Remove(clientID) }

func (r *Resolver) fetch(ctx context.Context, clientID string) (*Document, error) {
	fetcher, target := r.strict, clientID
	for _, m := range r.cfg.InsecureLoopbackMappings {
		if rest, ok := strings.CutPrefix(clientID, m.ClientIDPrefix); ok {
			fetcher, target = r.loopback, m.FetchPrefix+rest
			break
		}
	}
	resp, err := fetcher.Get(ctx, target, "application/json")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	doc, err := ParseDocument(resp.Body, clientID)
	if err != nil {
		return nil, err
	}
	now := clock.Func(r.cfg.Now).Now()
	if ttl := freshness(resp.Header, now, max(r.cfg.DefaultTTL, 0), r.cfg.MaxTTL); ttl > 0 {
		r.cache.Add(clientID, doc, now.Add(ttl))
	}
	return doc, nil
}

// clone returns a copy of d that shares no slices with it.
func (d *Document) clone() *Document {
	c := *d
	c.RedirectURIs = slices.Clone(d.RedirectURIs)
	c.GrantTypes = slices.Clone(d.GrantTypes)
	c.ResponseTypes = slices.Clone(d.ResponseTypes)
	c.Contacts = slices.Clone(d.Contacts)
	c.JWKS = slices.Clone(d.JWKS)
	return &c
}

// netHook embeds nethook.Hook in ResolverConfig under an unexported name.
type netHook = nethook.Hook
