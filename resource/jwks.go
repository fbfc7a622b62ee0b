package resource

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/remotekeys"
)

// RemoteKeysConfig configures a [RemoteKeys]: the issuer (for RFC 8414
// discovery of jwks_uri) or the JWK Set URL itself, the refetch and
// refresh intervals, the fetch timeout, TLS and the loopback switch, and
// the clock and logger.
type RemoteKeysConfig = remotekeys.Config

// Defaults applied to zero-valued [RemoteKeysConfig] fields.
const (
	DefaultRefetchInterval    = remotekeys.DefaultRefetchInterval
	DefaultMinRefreshInterval = remotekeys.DefaultMinRefreshInterval
)

// RemoteKeys is a [KeySource] for one issuer's JWK Set, fetched through
// mcpauth's SSRF-safe fetcher (https only, public addresses checked at dial
// time, no redirects, 64 KiB cap, JSON content types), parsed by the rule of
// [ParseStaticKeys] (a set holding a private or symmetric key is refused
// whole, never used for its public half) and refreshed in the background by
// jwx's jwk.Cache following its cache headers. An unknown "kid" triggers a
// refetch at most once per RefetchInterval, shared by all concurrent
// callers; when a fetch fails the last good keys stay in use. Construction
// does no I/O; the first Keys call fetches. It is safe for concurrent use;
// Close stops the background refresh.
type RemoteKeys struct{ keys *remotekeys.Set }

// NewRemoteKeys validates cfg. It performs no I/O and starts nothing.
// Errors wrap [ErrInvalidConfig].
func NewRemoteKeys(cfg RemoteKeysConfig) (*RemoteKeys, error) {
	k, err := remotekeys.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &RemoteKeys{k}, nil
}

// Keys returns the keys with ID kid (all keys for ""). Known keys are
// answered from memory without locking; an unknown kid causes at most one
// fetch per RefetchInterval. Errors match [ErrUnknownKey] when keys are
// known but none has that ID, and [ErrUnavailable] (reason "signing keys
// unavailable") when no keys could ever be obtained; the latter also wraps the reason the last fetch failed
// (a transport error, or the set refused by the rule of [ParseStaticKeys]).
func (k *RemoteKeys) Keys(ctx context.Context, kid string) ([]Key, error) {
	keys, err := k.keys.Keys(ctx, kid)
	switch {
	case err == nil:
		return keys, nil
	case errors.Is(err, remotekeys.ErrUnknownKey):
		return nil, ErrUnknownKey
	case errors.Is(err, remotekeys.ErrClosed):
		return nil, errVerifierClosed
	case errors.Is(err, remotekeys.ErrUnavailable):
		return nil, errors.Join(errKeysUnavailable, err)
	}
	return nil, err // the caller's context
}

// Close stops the background refresh and waits for fetches in progress.
// Keys fails with [ErrUnavailable] (reason "verifier
// closed") afterwards. It is safe to call more
// than once.
func (k *RemoteKeys) Close() error { return k.keys.Close() }
