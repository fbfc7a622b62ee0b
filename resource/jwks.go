package resource

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults applied to zero-valued [RemoteKeysConfig] fields.
const (
	DefaultRefetchInterval    = 30 * time.Second
	DefaultMinRefreshInterval = 5 * time.Minute
	maxKeysPerSet             = 100
	jwksAccept                = "application/jwk-set+json, application/json"
)

// Resolver resolves host names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// RemoteKeysConfig configures a [RemoteKeys].
type RemoteKeysConfig struct {
	// Issuer is the issuer identifier. When JWKSURI is empty, the JWK Set
	// URL is the jwks_uri of the issuer's RFC 8414 metadata, fetched from
	// the locations MCP prescribes and validated (identical issuer, safe
	// URLs) on first use. Required when JWKSURI is empty.
	Issuer string
	// JWKSURI is the JWK Set URL. Empty means discovery through Issuer.
	JWKSURI string
	// RefetchInterval is the minimum time between two fetches caused by
	// unknown key IDs (or by failures), so a flood of random "kid"s costs
	// at most one fetch per interval and a rotated-in key is picked up
	// within it. Zero means [DefaultRefetchInterval].
	RefetchInterval time.Duration
	// MinRefreshInterval is the floor of the background refresh period,
	// which otherwise follows the JWK Set's Cache-Control max-age or
	// Expires. Zero means [DefaultMinRefreshInterval]; at least 1 s.
	MinRefreshInterval time.Duration
	// Timeout bounds each fetch. Zero means 10 s.
	Timeout time.Duration
	// TLSConfig is the client TLS configuration. Nil means the system
	// roots.
	TLSConfig *tls.Config
	// InsecureAllowLoopback permits plain http and loopback addresses
	// (development). Private and special-use addresses stay refused.
	InsecureAllowLoopback bool
	// Resolver and Dial replace name resolution and connecting, for tests
	// that must prove refused addresses are never dialled. Nil means the
	// system resolver and a plain dialer.
	Resolver Resolver
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger, if set, receives background refresh failures.
	Logger *slog.Logger
	// Now is the clock for the refetch interval. Nil means time.Now.
	Now func() time.Time
}

// RemoteKeys is a [KeySource] for one issuer's JWK Set, fetched through
// mcpauth's SSRF-safe fetcher (https only, public addresses checked at dial
// time, no redirects, 1 MiB cap, JSON content types) and cached with
// jwx's jwk.Cache, which refreshes it in the background following its cache
// headers. An unknown "kid" triggers a refetch at most once per
// RefetchInterval, shared by all concurrent callers; when a fetch fails the
// last good keys stay in use. Construction does no I/O; the first Keys
// call fetches. It is safe for concurrent use; Close stops the background
// refresh.
type RemoteKeys struct {
	cfg      RemoteKeysConfig
	fetcher  *safehttp.Fetcher
	interval time.Duration
	snap     atomic.Pointer[keySnapshot]
	done     chan struct{}
	wg       sync.WaitGroup

	mu          sync.Mutex
	jwksURI     string
	cache       *jwk.Cache
	stopCache   context.CancelFunc
	lastAttempt time.Time
	inflight    *fetchCall
	closed      bool
}

type keySnapshot struct {
	all  []Key
	byID map[string][]Key
}

func (s *keySnapshot) lookup(kid string) []Key {
	if kid == "" {
		return s.all
	}
	return s.byID[kid]
}

type fetchCall struct {
	done chan struct{}
	snap *keySnapshot
	err  error
}

var errRateLimited = errors.New("resource: key refetch rate-limited")

// NewRemoteKeys validates cfg. It performs no I/O and starts nothing.
func NewRemoteKeys(cfg RemoteKeysConfig) (*RemoteKeys, error) {
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowLoopback}
	switch {
	case cfg.JWKSURI != "":
		if err := p.CheckURL(cfg.JWKSURI); err != nil {
			return nil, fmt.Errorf("%w: jwks_uri: %w", ErrInvalidConfig, err)
		}
	case cfg.Issuer == "":
		return nil, fmt.Errorf("%w: remote keys need an issuer or a jwks_uri", ErrInvalidConfig)
	default:
		if err := p.CheckIssuer(cfg.Issuer); err != nil {
			return nil, fmt.Errorf("%w: issuer: %w", ErrInvalidConfig, err)
		}
	}
	if cfg.RefetchInterval < 0 || cfg.MinRefreshInterval < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: negative interval", ErrInvalidConfig)
	}
	cfg.MinRefreshInterval = max(orDefault(cfg.MinRefreshInterval, DefaultMinRefreshInterval), time.Second)
	opts := safehttp.Options{
		TLSConfig:             cfg.TLSConfig,
		InsecureAllowLoopback: cfg.InsecureAllowLoopback,
		Timeout:               cfg.Timeout,
		UserAgent:             "mcpauth-resource",
	}
	if cfg.Resolver != nil {
		opts.Resolver = cfg.Resolver
	}
	if cfg.Dial != nil {
		opts.Dial = cfg.Dial
	}
	return &RemoteKeys{
		cfg:      cfg,
		fetcher:  safehttp.New(opts),
		interval: orDefault(cfg.RefetchInterval, DefaultRefetchInterval),
		jwksURI:  cfg.JWKSURI,
		done:     make(chan struct{}),
	}, nil
}

func (k *RemoteKeys) now() time.Time {
	if k.cfg.Now != nil {
		return k.cfg.Now()
	}
	return time.Now()
}

// Keys returns the keys with ID kid (all keys for ""). Known keys are
// answered from memory without locking; an unknown kid causes at most one
// fetch per RefetchInterval. Errors match [ErrUnknownKey] when keys are
// known but none has that ID, and [ErrKeysUnavailable] when no keys could
// ever be obtained.
func (k *RemoteKeys) Keys(ctx context.Context, kid string) ([]Key, error) {
	if snap := k.snap.Load(); snap != nil {
		if keys := snap.lookup(kid); len(keys) > 0 {
			return keys, nil
		}
	}
	snap, err := k.refetch(ctx)
	if err != nil {
		if errors.Is(err, ErrVerifierClosed) {
			return nil, err
		}
		if k.snap.Load() != nil {
			return nil, ErrUnknownKey
		}
		if errors.Is(err, errRateLimited) {
			return nil, ErrKeysUnavailable
		}
		return nil, errors.Join(ErrKeysUnavailable, err)
	}
	if keys := snap.lookup(kid); len(keys) > 0 {
		return keys, nil
	}
	return nil, ErrUnknownKey
}

// refetch runs one shared fetch, unless one ran less than interval ago.
func (k *RemoteKeys) refetch(ctx context.Context) (*keySnapshot, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, ErrVerifierClosed
	}
	c := k.inflight
	if c == nil {
		now := k.now()
		if !k.lastAttempt.IsZero() && now.Sub(k.lastAttempt) < k.interval {
			k.mu.Unlock()
			return nil, errRateLimited
		}
		k.lastAttempt = now
		c = &fetchCall{done: make(chan struct{})}
		k.inflight = c
		k.wg.Add(1)
		go k.runFetch(c)
	}
	k.mu.Unlock()
	select {
	case <-c.done:
		return c.snap, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runFetch performs a fetch detached from any one request, so a caller
// that gives up does not fail the others waiting on it.
func (k *RemoteKeys) runFetch(c *fetchCall) {
	defer k.wg.Done()
	ctx, cancel := k.fetchContext()
	defer cancel()
	c.snap, c.err = k.fetch(ctx)
	k.mu.Lock()
	k.inflight = nil
	k.mu.Unlock()
	close(c.done)
}

// fetchContext returns a context bounded by the fetch timeout and
// cancelled by Close.
func (k *RemoteKeys) fetchContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), orDefault(k.cfg.Timeout, safehttp.DefaultTimeout))
	go func() {
		select {
		case <-k.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Close stops the background refresh and waits for fetches in progress.
// Keys fails with [ErrVerifierClosed] afterwards. It is safe to call more
// than once.
func (k *RemoteKeys) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	close(k.done)
	stop := k.stopCache
	k.mu.Unlock()
	if stop != nil {
		stop()
	}
	k.wg.Wait()
	return nil
}

// convertSet turns a parsed JWK Set into standard-library keys, keeping
// signature keys of supported types only (no symmetric keys, no "use":"enc",
// an "alg" that is supported and fits the key type).
func convertSet(set jwk.Set) (*keySnapshot, error) {
	snap := &keySnapshot{byID: map[string][]Key{}}
	for i := 0; i < set.Len() && len(snap.all) < maxKeysPerSet; i++ {
		key, ok := set.Key(i)
		if !ok {
			continue
		}
		if use := key.KeyUsage(); use != "" && use != "sig" {
			continue
		}
		pk, err := key.PublicKey()
		if err != nil {
			continue
		}
		var raw any
		if err := pk.Raw(&raw); err != nil {
			continue
		}
		pub := publicKey(raw)
		if pub == nil {
			continue
		}
		alg := key.Algorithm().String()
		if alg != "" {
			if known, fits := algorithmFits(alg, pub); !known || !fits {
				continue
			}
		}
		k := Key{ID: key.KeyID(), Algorithm: alg, Public: pub}
		snap.all = append(snap.all, k)
		snap.byID[k.ID] = append(snap.byID[k.ID], k)
	}
	if len(snap.all) == 0 {
		return nil, errors.New("resource: JWK Set has no usable signature keys")
	}
	return snap, nil
}

func publicKey(raw any) any {
	switch k := raw.(type) {
	case *ecdsa.PublicKey:
		return k
	case *rsa.PublicKey:
		return k
	case ed25519.PublicKey:
		return k
	}
	return nil
}
