package authserver

import (
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/resource"
)

// DefaultMaxKeySets bounds the JWK sets fetched by URL that the server
// keeps (one per client jwks_uri or trusted issuer).
const DefaultMaxKeySets = 128

// KeyFetchConfig configures the fetching of JWK sets named by URL: a
// client's jwks_uri (private_key_jwt, including Client ID Metadata
// Documents) and a trusted issuer's JWKSURI. Every fetch goes through the
// SSRF-guarded fetcher (https, public addresses checked at dial time, no
// redirects, 1 MiB) and the sets are cached and refreshed as their cache
// headers say.
type KeyFetchConfig struct {
	// Resolver resolves host names before the address check. Nil means the
	// system resolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// Dial opens a connection to an address that passed the check. Nil
	// means a net.Dialer. Tests use it to prove nothing is dialled.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TLSConfig is the client TLS configuration. Nil means the system roots.
	TLSConfig *tls.Config
	// InsecureAllowLoopback permits plain http and loopback addresses, for
	// tests and local development. False means https to public addresses.
	InsecureAllowLoopback bool
	// MaxSets bounds the cached sets; the oldest is dropped beyond it.
	// Zero means [DefaultMaxKeySets].
	MaxSets int
}

// remoteKeySets is a bounded set of remote JWK sets by URL, each a
// resource.RemoteKeys (jwx's jwk.Cache behind the SSRF-safe fetcher). It is
// safe for concurrent use; close releases every set.
type remoteKeySets struct {
	cfg KeyFetchConfig
	now func() time.Time

	mu    sync.Mutex
	sets  map[string]*resource.RemoteKeys
	order []string
	done  bool
}

func newRemoteKeySets(cfg KeyFetchConfig, now func() time.Time) *remoteKeySets {
	if cfg.MaxSets <= 0 {
		cfg.MaxSets = DefaultMaxKeySets
	}
	return &remoteKeySets{cfg: cfg, now: now, sets: make(map[string]*resource.RemoteKeys)}
}

// source returns the key source for the JWK set at uri, creating it (no
// I/O yet) when it is new.
func (r *remoteKeySets) source(uri string) (jwtassert.KeySource, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, ErrClosed
	}
	if k, ok := r.sets[uri]; ok {
		return remoteSource{k}, nil
	}
	cfg := resource.RemoteKeysConfig{
		JWKSURI: uri, TLSConfig: r.cfg.TLSConfig, InsecureAllowLoopback: r.cfg.InsecureAllowLoopback,
		Dial: r.cfg.Dial, Now: r.now,
	}
	if r.cfg.Resolver != nil {
		cfg.Resolver = r.cfg.Resolver
	}
	k, err := resource.NewRemoteKeys(cfg)
	if err != nil {
		return nil, err
	}
	if len(r.order) >= r.cfg.MaxSets {
		oldest := r.order[0]
		r.order = r.order[1:]
		_ = r.sets[oldest].Close()
		delete(r.sets, oldest)
	}
	r.sets[uri] = k
	r.order = append(r.order, uri)
	return remoteSource{k}, nil
}

func (r *remoteKeySets) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	for _, k := range r.sets {
		_ = k.Close()
	}
	clear(r.sets)
	return nil
}

// remoteSource adapts resource.RemoteKeys to jwtassert.KeySource: an
// unknown kid is "no key" (the assertion is refused as unverifiable), not
// an outage.
type remoteSource struct{ k *resource.RemoteKeys }

func (s remoteSource) Keys(ctx context.Context, kid string) ([]jwtassert.Key, error) {
	keys, err := s.k.Keys(ctx, kid)
	if errors.Is(err, resource.ErrUnknownKey) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]jwtassert.Key, len(keys))
	for i, k := range keys {
		out[i] = jwtassert.Key{ID: k.ID, Algorithm: k.Algorithm, Public: k.Public}
	}
	return out, nil
}

// keySource returns the verification keys of one party from exactly one
// of a static JWK set, a jwks_uri or public keys.
func (s *Server) keySource(jwks json.RawMessage, jwksURI string, pubs []crypto.PublicKey) (jwtassert.KeySource, error) {
	switch {
	case len(jwks) > 0 && string(jwks) != "null":
		return jwtassert.ParseJWKS(jwks)
	case jwksURI != "":
		return s.clientKeys.source(jwksURI)
	case len(pubs) > 0:
		return jwtassert.PublicKeys(pubs...), nil
	}
	return nil, errors.New("authserver: no verification keys")
}
