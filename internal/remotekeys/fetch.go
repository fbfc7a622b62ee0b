package remotekeys

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lestrrat-go/httprc"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// fetch obtains the key set: discovery of jwks_uri when needed, then the
// first fetch through the jwk.Cache (which schedules its background
// refreshes), later ones directly.
//
// Later on-demand fetches deliberately bypass jwk.Cache.Refresh: the cache
// schedules a new periodic refresh after every fetch it performs, so each
// forced refresh would add another endless refresh chain. Every fetch, on
// demand or in the background, goes through load.
func (k *Set) fetch(ctx context.Context) (*keySnapshot, error) {
	k.mu.Lock()
	uri, cache := k.jwksURI, k.cache
	k.mu.Unlock()
	if uri == "" {
		var err error
		if uri, err = k.discover(ctx); err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.jwksURI = uri
		k.mu.Unlock()
	}
	if cache == nil {
		return k.startCache(ctx, uri)
	}
	snap, _, err := k.load(ctx, uri)
	return snap, err
}

// load fetches the JWK Set at uri, parses it with jwkset.Parse (the one
// JWK Set rule of the module) and publishes the keys. A refused set is an
// error, so the last good keys stay in use.
func (k *Set) load(ctx context.Context, uri string) (*keySnapshot, http.Header, error) {
	resp, err := k.fetcher.Get(ctx, uri, jwksAccept)
	if tooLarge := (*safehttp.TooLargeError)(nil); errors.As(err, &tooLarge) {
		// The fetcher applies the parser's size bound while reading.
		return nil, nil, fmt.Errorf("remotekeys: JWK Set: %w: larger than %d bytes", jwkset.ErrInvalid, jwkset.MaxSize)
	}
	if err != nil {
		return nil, nil, err
	}
	keys, err := jwkset.Parse(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("remotekeys: JWK Set: %w", err)
	}
	snap := snapshotOf(keys)
	k.snap.Store(snap)
	k.mu.Lock()
	k.loadedAt = clock.Func(k.cfg.Now).Now()
	k.mu.Unlock()
	return snap, resp.Header, nil
}

// discover finds jwks_uri in the issuer's validated metadata, trying the
// RFC 8414 and OpenID Connect locations in MCP's order.
func (k *Set) discover(ctx context.Context) (string, error) {
	urls, err := oauthmeta.AuthServerMetadataURLs(k.cfg.Issuer)
	if err != nil {
		return "", err
	}
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: k.cfg.InsecureAllowHTTPLoopback}
	var firstErr error
	for _, u := range urls {
		resp, err := k.fetcher.Get(ctx, u, "application/json")
		if err == nil {
			var md *oauthmeta.AuthServerMetadata
			if md, err = oauthmeta.ParseAuthServerMetadata(resp.Body); err == nil {
				if err = md.Validate(k.cfg.Issuer, p); err == nil {
					if md.JWKSURI == "" {
						return "", fmt.Errorf("remotekeys: issuer metadata has no jwks_uri")
					}
					if err = p.CheckURL(md.JWKSURI); err == nil {
						return md.JWKSURI, nil
					}
				}
			}
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("remotekeys: issuer metadata: %w", firstErr)
}

// startCache creates the jwk.Cache, registers the JWK Set and fetches it
// once through the cache, which starts the background refresh. The cache
// only schedules: its fetches go through load (see jwksClient), so the keys
// in use always come from jwkset.Parse, never from jwx's more lenient
// jwk.Parse.
func (k *Set) startCache(ctx context.Context, uri string) (*keySnapshot, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, ErrClosed
	}
	// The cache refreshes until Close cancels k.life. Register fails only
	// for a URL outside a whitelist, which this cache does not have.
	window := min(k.cfg.MinRefreshInterval, time.Minute)
	cache := jwk.NewCache(k.life, jwk.WithRefreshWindow(window), jwk.WithErrSink(httprc.ErrSinkFunc(k.refreshFailed)))
	err := cache.Register(uri,
		jwk.WithHTTPClient(&jwksClient{k: k}),
		jwk.WithMinRefreshInterval(k.cfg.MinRefreshInterval))
	if err != nil {
		k.mu.Unlock()
		return nil, err
	}
	k.cache = cache
	k.mu.Unlock()
	if _, err := cache.Refresh(ctx, uri); err != nil {
		return nil, err
	}
	snap := k.snap.Load()
	if snap == nil {
		return nil, fmt.Errorf("remotekeys: JWK Set not loaded")
	}
	return snap, nil
}

func (k *Set) refreshFailed(err error) {
	if k.cfg.Logger != nil {
		k.cfg.Logger.Warn("mcpauth: JWK Set refresh failed; keeping the last good keys", "issuer", k.cfg.Issuer, "error", err)
	}
}

// emptySet is what jwk.Cache is handed after load has parsed and published
// a fetched set: the cache needs a document to parse but its copy is never
// read, and handing it the original would let jwx's lenient parser judge
// the set a second time.
const emptySet = `{"keys":[]}`

// jwksClient adapts load to the client interface jwk.Cache uses, so
// background refreshes get the same fetcher guards (address checks, size
// cap, status and content type checks, a timeout) and the same JWK Set rule.
// The response keeps the fetched headers, from which the cache schedules
// the next refresh.
type jwksClient struct{ k *Set }

func (c *jwksClient) Get(u string) (*http.Response, error) {
	ctx, cancel := c.k.fetchContext()
	defer cancel()
	_, header, err := c.k.load(ctx, u)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Header:        header,
		Body:          io.NopCloser(strings.NewReader(emptySet)),
		ContentLength: int64(len(emptySet)),
	}, nil
}
