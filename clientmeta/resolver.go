package clientmeta

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

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

// HostResolver resolves host names; *net.Resolver implements it.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

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
	// HostResolver resolves host names before the address check. Nil means
	// the system resolver.
	HostResolver HostResolver
	// Dial opens a connection to an address that passed the check. Nil
	// means a net.Dialer. Tests use it to prove nothing is dialled.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
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
}

// Resolver fetches, validates and caches Client ID Metadata Documents for
// an authorization server, treating every client_id URL as hostile input
// (requirements CIMD-01 to CIMD-06, CIMD-11). It is safe for concurrent
// use; simultaneous misses for one client_id share one fetch. Constructing
// one does no I/O and starts no goroutine.
type Resolver struct {
	cfg      ResolverConfig
	strict   *safehttp.Fetcher
	loopback *safehttp.Fetcher // nil unless mappings are configured
	cache    *docCache

	mu       sync.Mutex
	inflight map[string]*call
}

type call struct {
	done chan struct{}
	doc  *Document
	err  error
}

// NewResolver validates cfg and returns a Resolver.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	cfg.Timeout = cmpOr(cfg.Timeout, DefaultTimeout)
	cfg.MaxBytes = cmpOr(cfg.MaxBytes, DefaultMaxBytes)
	cfg.MaxTTL = cmpOr(cfg.MaxTTL, DefaultMaxTTL)
	cfg.DefaultTTL = cmpOr(cfg.DefaultTTL, DefaultTTL)
	cfg.MaxEntries = cmpOr(cfg.MaxEntries, DefaultMaxEntries)
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
		Resolver:  cfg.HostResolver,
		Dial:      safehttp.DialFunc(cfg.Dial),
		TLSConfig: cfg.TLSConfig,
		MaxBytes:  cfg.MaxBytes,
		Timeout:   cfg.Timeout,
		UserAgent: cfg.UserAgent,
	}
	r := &Resolver{
		cfg:      cfg,
		strict:   safehttp.New(opts),
		cache:    newDocCache(cfg.MaxEntries),
		inflight: make(map[string]*call),
	}
	if len(cfg.InsecureLoopbackMappings) > 0 {
		opts.InsecureAllowLoopback = true
		r.loopback = safehttp.New(opts)
	}
	return r, nil
}

func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
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

func (r *Resolver) now() time.Time {
	if r.cfg.Now != nil {
		return r.cfg.Now()
	}
	return time.Now()
}

// Resolve returns the validated document for clientID. In order: the
// client_id URL rules (CIMD-01), the trust policy (CIMD-11), the cache
// (CIMD-06), then one fetch (CIMD-04, CIMD-05) whose document must pass
// [ParseDocument] against clientID (CIMD-02, CIMD-03). Failures are never
// cached. The returned document is the caller's to modify.
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
	if doc, ok := r.cache.get(clientID, r.now()); ok {
		return doc.clone(), nil
	}
	r.mu.Lock()
	c, waiting := r.inflight[clientID]
	if !waiting {
		c = &call{done: make(chan struct{})}
		r.inflight[clientID] = c
	}
	r.mu.Unlock()
	if waiting {
		select {
		case <-c.done:
			if c.err != nil {
				return nil, c.err
			}
			return c.doc.clone(), nil
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrFetch, ctx.Err())
		}
	}
	c.doc, c.err = r.fetch(ctx, clientID)
	r.mu.Lock()
	delete(r.inflight, clientID)
	r.mu.Unlock()
	close(c.done)
	if c.err != nil {
		return nil, c.err
	}
	return c.doc.clone(), nil
}

// Forget drops clientID from the cache, so the next Resolve fetches again.
func (r *Resolver) Forget(clientID string) { r.cache.forget(clientID) }

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
	now := r.now()
	def := r.cfg.DefaultTTL
	if def < 0 {
		def = 0
	}
	if ttl := freshness(resp.Header, now, def, r.cfg.MaxTTL); ttl > 0 {
		r.cache.put(clientID, doc, now.Add(ttl), now)
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
