package resource

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
)

// ParseStaticKeys parses a JWK Set document (RFC 7517 §5), such as an
// authorization server's keys distributed out of band, by the rule
// [RemoteKeys] applies to fetched sets and the authorization server to
// clients' sets: at most 64 KiB and 100 keys, strict JSON (case-sensitive
// names, duplicates refused); the whole set refused when any member holds
// private or symmetric key material; members whose key type, curve, "use",
// "key_ops" or "alg" do not make them usable for verifying a signature are
// skipped; a set with no usable key left is refused. Errors match
// [ErrInvalidConfig].
func ParseStaticKeys(jwks []byte) (keyset.Static, error) {
	keys, err := jwkset.Parse(jwks)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return keyset.Static(keys), nil
}

// Defaults applied to zero-valued [RemoteKeysConfig] fields.
const (
	DefaultRefetchInterval    = 30 * time.Second
	DefaultMinRefreshInterval = 5 * time.Minute
)

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
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses
	// (development). Private and special-use addresses stay refused.
	InsecureAllowHTTPLoopback bool
	// Logger, if set, receives background refresh failures.
	Logger *slog.Logger
	// Now is the clock for the refetch interval. Nil means time.Now.
	Now func() time.Time

	netHook // the module's tests' resolver and dial function
}

// netHook embeds nethook.Hook under an unexported name.
type netHook = nethook.Hook

// RemoteKeys is a [keyset.Source] for one issuer's JWK Set, fetched through
// mcpauth's SSRF-safe fetcher (https only, public addresses checked at dial
// time, no redirects, 64 KiB cap, JSON content types), parsed by the rule of
// [ParseStaticKeys] (a set holding a private or symmetric key is refused
// whole, never used for its public half) and refreshed in the background,
// following its cache headers. An unknown "kid" triggers a refetch at most
// once per RefetchInterval, shared by all concurrent callers; when a fetch
// fails the last good keys stay in use. Construction does no I/O; the first
// Keys call fetches. It is safe for concurrent use; Close stops the
// background refresh.
type RemoteKeys struct{ keys *remotekeys.Set }

// NewRemoteKeys validates cfg. It performs no I/O and starts nothing.
// Errors wrap [ErrInvalidConfig].
func NewRemoteKeys(cfg RemoteKeysConfig) (*RemoteKeys, error) {
	rc := remotekeys.Config{
		Issuer: cfg.Issuer, JWKSURI: cfg.JWKSURI, RefetchInterval: cmp.Or(cfg.RefetchInterval, DefaultRefetchInterval),
		MinRefreshInterval: cmp.Or(cfg.MinRefreshInterval, DefaultMinRefreshInterval), Timeout: cfg.Timeout, TLSConfig: cfg.TLSConfig,
		InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback, Logger: cfg.Logger, Now: cfg.Now,
	}
	k, err := remotekeys.New(*nethook.Set(&rc, nethook.Of(&cfg)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &RemoteKeys{k}, nil
}

// Keys returns the keys with ID kid (all keys for ""). Known keys are
// answered from memory without locking; an unknown kid causes at most one
// fetch per RefetchInterval. Errors match [keyset.ErrUnknownKey] when keys
// are known but none has that ID, and [keyset.ErrUnavailable] when no keys
// could ever be obtained (joined with the reason the last fetch failed: a
// transport error, or the set refused by the rule of [ParseStaticKeys]) or
// after Close.
func (k *RemoteKeys) Keys(ctx context.Context, kid string) ([]keyset.Key, error) {
	return k.keys.Keys(ctx, kid)
}

// Close stops the background refresh and waits for fetches in progress.
// Keys fails afterwards. It is safe to call more than once.
func (k *RemoteKeys) Close() error { return k.keys.Close() }

func checkAlgorithms(algs []string) ([]string, error) {
	if algs != nil && len(algs) == 0 {
		return nil, fmt.Errorf("%w: empty algorithm allowlist", ErrInvalidConfig)
	}
	out, err := jwa.Allowlist(algs, DefaultAlgorithms())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return out, nil
}
