package authserver

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
)

// defaultMaxKeySets bounds the JWK sets fetched by URL that the server
// keeps (one per client jwks_uri or trusted issuer).
const defaultMaxKeySets = 128

// KeyFetchConfig configures the fetching of JWK sets named by URL: a
// client's jwks_uri (private_key_jwt, including Client ID Metadata
// Documents) and a trusted issuer's JWKSURI. Every fetch goes through the
// SSRF-guarded fetcher (https, public addresses checked at dial time, no
// redirects, 64 KiB), each set is judged by the same JWK Set rule as an
// inline "jwks", and the sets are cached and refreshed as their cache
// headers say.
type KeyFetchConfig struct {
	// TLSConfig is the client TLS configuration. Nil means the system roots.
	TLSConfig *tls.Config
	// InsecureAllowHTTPLoopback permits plain http and loopback addresses, for
	// tests and local development. False means https to public addresses.
	InsecureAllowHTTPLoopback bool
	// MaxSets bounds the cached sets; the least recently used is dropped
	// beyond it.
	// Zero means 128.
	MaxSets int

	// net is the tests' resolver and dial function (internal/nethook), reached
	// through nethook.Set and nethook.Of,
	// passed on to every key set.
	netHook
}

// remoteKeySets is a bounded set of remote JWK sets by URL, each a
// remotekeys.Set (jwx's jwk.Cache behind the SSRF-safe fetcher). It is
// safe for concurrent use; close releases every set.
type remoteKeySets struct {
	cfg  KeyFetchConfig
	now  func() time.Time
	sets *lru.Cache[string, *remotekeys.Set] // closes what it drops

	mu     sync.Mutex  // serializes creation, so a URL gets one set
	pinned []pinnedSet // the trusted issuers' sets, never dropped
	done   bool
}

// pinnedSet is a trusted issuer's set, by its JWKSURI or "discover "
// and its issuer.
type pinnedSet struct {
	key, issuer string
	set         *remotekeys.Set
}

func newRemoteKeySets(cfg KeyFetchConfig, now func() time.Time) *remoteKeySets {
	closeSet := func(_ string, k *remotekeys.Set) { _ = k.Close() }
	return &remoteKeySets{cfg: cfg, now: now,
		sets: lru.New(cmp.Or(cfg.MaxSets, defaultMaxKeySets), nil, closeSet)}
}

// source returns the key source for the JWK set at uri (a client's
// jwks_uri), creating it (no I/O yet) when it is new.
func (r *remoteKeySets) source(uri string) (keyset.Source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, ErrClosed
	}
	if k, ok := r.sets.Get(uri); ok {
		return remoteSource{k}, nil
	}
	k, err := r.newSet(remotekeys.Config{JWKSURI: uri})
	if err != nil {
		return nil, err
	}
	r.sets.Add(uri, k, time.Time{})
	return remoteSource{k}, nil
}

// trusted returns the key source of a trusted issuer: the JWK set at
// jwksURI or, when it is empty, at the jwks_uri found in the issuer's
// OpenID Connect Discovery or RFC 8414 metadata. These sets are kept apart
// from the clients' (never dropped, so no flood of client jwks_uri can
// close them), one per URL or issuer, and are the ones ready checks.
func (r *remoteKeySets) trusted(issuer, jwksURI string) (keyset.Source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, ErrClosed
	}
	key, cfg := jwksURI, remotekeys.Config{JWKSURI: jwksURI}
	if jwksURI == "" {
		key, cfg = "discover "+issuer, remotekeys.Config{Issuer: issuer}
	}
	for _, t := range r.pinned {
		if t.key == key {
			return remoteSource{t.set}, nil
		}
	}
	k, err := r.newSet(cfg)
	if err != nil {
		return nil, err
	}
	r.pinned = append(r.pinned, pinnedSet{key: key, issuer: issuer, set: k})
	return remoteSource{k}, nil
}

// newSet creates a set of cfg with r's fetch settings. No I/O.
func (r *remoteKeySets) newSet(cfg remotekeys.Config) (*remotekeys.Set, error) {
	cfg.TLSConfig, cfg.InsecureAllowHTTPLoopback, cfg.Now = r.cfg.TLSConfig, r.cfg.InsecureAllowHTTPLoopback, r.now
	nethook.Set(&cfg, nethook.Of(&r.cfg))
	return remotekeys.New(cfg)
}

// fetchesTrusted says whether a trusted issuer's keys are fetched.
func (r *remoteKeySets) fetchesTrusted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pinned) > 0
}

// ready checks every trusted issuer's fetched set (see remotekeys.Set's
// Ready); the error names the issuers whose keys are missing or stale.
// Clients' sets are not checked: a client's keys are its own affair.
func (r *remoteKeySets) ready(ctx context.Context) error {
	r.mu.Lock()
	pinned := slices.Clone(r.pinned)
	r.mu.Unlock()
	var errs []error
	for _, t := range pinned {
		if err := t.set.Ready(ctx); err != nil {
			errs = append(errs, fmt.Errorf("trusted issuer %s: %w", t.issuer, err))
		}
	}
	return errors.Join(errs...)
}

func (r *remoteKeySets) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.sets.Purge()
	for _, t := range r.pinned {
		_ = t.set.Close()
	}
	r.pinned = nil
	return nil
}

// remoteSource is a remotekeys.Set as the verifier's keyset.Source, with
// one difference: a fetched set that jwkset.Parse refuses is "no key" (the
// assertion is refused as unverifiable), not an outage, exactly as the same
// set given inline is (invalid_client, not temporarily_unavailable).
type remoteSource struct{ k *remotekeys.Set }

func (s remoteSource) Keys(ctx context.Context, kid string) ([]keyset.Key, error) {
	keys, err := s.k.Keys(ctx, kid)
	if errors.Is(err, jwkset.ErrInvalid) {
		return nil, keyset.ErrUnknownKey
	}
	return keys, err
}

// keySource returns the verification keys of one party (a client, a
// trusted issuer) from exactly one of a static JWK set, a jwks_uri (one
// of r's sets) or public keys. Inline and fetched sets are judged by the
// same rule (jwkset.Parse, also behind remotekeys.Set).
func (r *remoteKeySets) keySource(jwks json.RawMessage, jwksURI string, pubs []crypto.PublicKey) (keyset.Source, error) {
	switch {
	case len(jwks) > 0 && string(jwks) != "null":
		keys, err := jwkset.Parse(jwks)
		if err != nil {
			return nil, err
		}
		return keyset.Static(keys), nil
	case jwksURI != "":
		return r.source(jwksURI)
	case len(pubs) > 0:
		return keyset.PublicKeys(pubs...), nil
	}
	return nil, errors.New("authserver: no verification keys")
}

// netHook embeds nethook.Hook in KeyFetchConfig under an unexported name.
type netHook = nethook.Hook
