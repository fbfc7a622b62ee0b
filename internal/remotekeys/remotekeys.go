package remotekeys

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ErrClosed is the error of [Set.Keys] after Close. It matches
// keyset.ErrUnavailable.
var ErrClosed = fmt.Errorf("%w: remote keys closed", keyset.ErrUnavailable)

// Defaults applied to zero-valued [Config] fields.
const (
	DefaultRefetchInterval    = 30 * time.Second
	DefaultMinRefreshInterval = 5 * time.Minute
	DefaultStaleAfter         = time.Hour
	jwksAccept                = "application/jwk-set+json, application/json"
)

// Config configures a [Set].
type Config struct {
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
	// StaleAfter is how long after the last successful fetch the keys
	// count as stale for [Set.Ready] (they stay in use for verification).
	// Zero means [DefaultStaleAfter]; never less than twice the
	// MinRefreshInterval, so a working background refresh keeps them fresh.
	StaleAfter time.Duration
	// Timeout bounds each fetch. Zero means 10 s.
	Timeout time.Duration
	// TLSConfig is the client TLS configuration. Nil means the system
	// roots.
	TLSConfig *tls.Config
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses
	// (development). Private and special-use addresses stay refused.
	InsecureAllowHTTPLoopback bool
	// Logger, if set, receives background refresh failures.
	Logger *slog.Logger
	// Now is the clock for the refetch interval. Nil means time.Now.
	Now func() time.Time

	// net is the tests' resolver and dial function (internal/nethook), reached
	// through nethook.Set and nethook.Of.
	netHook
}

// Set is a key source for one issuer's JWK Set, fetched through
// mcpauth's SSRF-safe fetcher (https only, public addresses checked at dial
// time, no redirects, 64 KiB cap, JSON content types), parsed by the rule
// of [jwkset.Parse] (a set holding a private or symmetric key is refused
// whole, never used for its public half) and refreshed in the background
// by jwx's jwk.Cache following its cache headers. An unknown "kid" triggers
// a refetch at most once per RefetchInterval, shared by all concurrent
// callers; when a fetch fails the last good keys stay in use. Construction
// does no I/O; the first Keys call fetches. It is safe for concurrent use;
// Close stops the background refresh.
type Set struct {
	cfg      Config
	fetcher  *safehttp.Fetcher
	interval time.Duration
	snap     atomic.Pointer[keySnapshot]
	life     context.Context // cancelled by Close: ends fetches and the cache's refresh
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu          sync.Mutex
	jwksURI     string
	cache       *jwk.Cache
	lastAttempt time.Time
	lastErr     error     // why the last fetch failed; nil after a success
	loadedAt    time.Time // when a fetched set was last published
	closed      bool
	flight      singleflight.Group
}

type keySnapshot struct {
	all  []jwa.Key
	byID map[string][]jwa.Key
}

func (s *keySnapshot) lookup(kid string) []jwa.Key {
	if kid == "" {
		return s.all
	}
	return s.byID[kid]
}

var errRateLimited = errors.New("remotekeys: key refetch rate-limited")

// New validates cfg. It performs no I/O and starts nothing.
func New(cfg Config) (*Set, error) {
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}
	switch {
	case cfg.JWKSURI != "":
		if err := p.CheckURL(cfg.JWKSURI); err != nil {
			return nil, fmt.Errorf("remotekeys: jwks_uri: %w", err)
		}
	case cfg.Issuer == "":
		return nil, errors.New("remotekeys: remote keys need an issuer or a jwks_uri")
	default:
		if err := p.CheckIssuer(cfg.Issuer); err != nil {
			return nil, fmt.Errorf("remotekeys: issuer: %w", err)
		}
	}
	if cfg.RefetchInterval < 0 || cfg.MinRefreshInterval < 0 || cfg.Timeout < 0 || cfg.StaleAfter < 0 {
		return nil, errors.New("remotekeys: negative interval")
	}
	cfg.MinRefreshInterval = max(cmp.Or(cfg.MinRefreshInterval, DefaultMinRefreshInterval), time.Second)
	cfg.StaleAfter = max(cmp.Or(cfg.StaleAfter, DefaultStaleAfter), 2*cfg.MinRefreshInterval)
	opts := safehttp.Options{
		TLSConfig:                 cfg.TLSConfig,
		InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback,
		Timeout:                   cfg.Timeout,
		MaxBytes:                  jwkset.MaxSize,
		UserAgent:                 "mcpauth",
	}
	nethook.Of(&cfg).Apply(&opts)
	life, stop := context.WithCancel(context.Background())
	return &Set{
		cfg:      cfg,
		fetcher:  safehttp.New(opts),
		interval: cmp.Or(cfg.RefetchInterval, DefaultRefetchInterval),
		jwksURI:  cfg.JWKSURI,
		life:     life,
		stop:     stop,
	}, nil
}

// Keys returns the keys with ID kid (all keys for ""). Known keys are
// answered from memory without locking; an unknown kid causes at most one
// fetch per RefetchInterval. Errors match keyset.ErrUnknownKey when keys are
// known but none has that ID, and keyset.ErrUnavailable when no keys could
// ever be obtained; the latter also wraps the reason the last fetch failed
// (a transport error, or the set refused by the rule of [jwkset.Parse]).
func (k *Set) Keys(ctx context.Context, kid string) ([]jwa.Key, error) {
	if snap := k.snap.Load(); snap != nil {
		if keys := snap.lookup(kid); len(keys) > 0 {
			return keys, nil
		}
	}
	snap, err := k.refetch(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		if k.snap.Load() != nil {
			return nil, keyset.ErrUnknownKey
		}
		if errors.Is(err, errRateLimited) {
			k.mu.Lock()
			last := k.lastErr
			k.mu.Unlock()
			return nil, errors.Join(keyset.ErrUnavailable, last)
		}
		return nil, errors.Join(keyset.ErrUnavailable, err)
	}
	if keys := snap.lookup(kid); len(keys) > 0 {
		return keys, nil
	}
	return nil, keyset.ErrUnknownKey
}

// refetch waits for the one shared fetch, or for ctx.
func (k *Set) refetch(ctx context.Context) (*keySnapshot, error) {
	return flight.Do(ctx, &k.flight, "", k.sharedFetch)
}

// sharedFetch fetches once for every caller waiting on it, unless a fetch
// started less than interval ago. It runs detached from any one request,
// so a caller that gives up does not fail the others waiting on it.
func (k *Set) sharedFetch() (*keySnapshot, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, ErrClosed
	}
	now := clock.Func(k.cfg.Now).Now()
	if !k.lastAttempt.IsZero() && now.Sub(k.lastAttempt) < k.interval {
		k.mu.Unlock()
		return nil, errRateLimited
	}
	k.lastAttempt = now
	k.wg.Add(1)
	k.mu.Unlock()
	defer k.wg.Done()
	ctx, cancel := k.fetchContext()
	defer cancel()
	snap, err := k.fetch(ctx)
	k.mu.Lock()
	k.lastErr = err
	k.mu.Unlock()
	return snap, err
}

// fetchContext returns a context bounded by the fetch timeout and
// cancelled by Close.
func (k *Set) fetchContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(k.life, cmp.Or(k.cfg.Timeout, safehttp.DefaultTimeout))
}

// Close stops the background refresh and waits for fetches in progress.
// Keys fails with [ErrClosed] afterwards. It is safe to call more
// than once.
func (k *Set) Close() error {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
	k.stop()
	k.wg.Wait()
	return nil
}

// snapshotOf indexes keys parsed by jwkset.Parse, the module's one JWK
// Set rule.
func snapshotOf(keys []jwa.Key) *keySnapshot {
	snap := &keySnapshot{all: keys, byID: make(map[string][]jwa.Key, len(keys))}
	for _, k := range snap.all {
		snap.byID[k.ID] = append(snap.byID[k.ID], k)
	}
	return snap
}

// netHook embeds nethook.Hook in Config under an unexported name.
type netHook = nethook.Hook
