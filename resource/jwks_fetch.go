package resource

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// fetch obtains the key set: discovery of jwks_uri when needed, then the
// first fetch through the jwk.Cache (which schedules its background
// refreshes), later ones directly.
//
// Later on-demand fetches deliberately bypass jwk.Cache.Refresh: the cache
// schedules a new periodic refresh after every fetch it performs, so each
// forced refresh would add another endless refresh chain. They use the same
// fetcher and jwx parser and publish into the same snapshot.
func (k *RemoteKeys) fetch(ctx context.Context) (*keySnapshot, error) {
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
	resp, err := k.fetcher.Get(ctx, uri, jwksAccept)
	if err != nil {
		return nil, err
	}
	set, err := jwk.Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("resource: JWK Set: %w", err)
	}
	snap, err := convertSet(set)
	if err != nil {
		return nil, err
	}
	k.snap.Store(snap)
	return snap, nil
}

// discover finds jwks_uri in the issuer's validated metadata, trying the
// RFC 8414 and OpenID Connect locations in MCP's order.
func (k *RemoteKeys) discover(ctx context.Context) (string, error) {
	urls, err := oauthmeta.AuthServerMetadataURLs(k.cfg.Issuer)
	if err != nil {
		return "", err
	}
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: k.cfg.InsecureAllowLoopback}
	var firstErr error
	for _, u := range urls {
		resp, err := k.fetcher.Get(ctx, u, "application/json")
		if err == nil {
			var md *oauthmeta.AuthServerMetadata
			if md, err = oauthmeta.ParseAuthServerMetadata(resp.Body); err == nil {
				if err = md.Validate(k.cfg.Issuer, p); err == nil {
					if md.JWKSURI == "" {
						return "", fmt.Errorf("resource: issuer metadata has no jwks_uri")
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
	return "", fmt.Errorf("resource: issuer metadata: %w", firstErr)
}

// startCache creates the jwk.Cache, registers the JWK Set and fetches it
// once through the cache, which starts the background refresh.
func (k *RemoteKeys) startCache(ctx context.Context, uri string) (*keySnapshot, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil, ErrVerifierClosed
	}
	life, stop := context.WithCancel(context.Background())
	window := min(k.cfg.MinRefreshInterval, time.Minute)
	cache := jwk.NewCache(life, jwk.WithRefreshWindow(window), jwk.WithErrSink(errSink(k.refreshFailed)))
	err := cache.Register(uri,
		jwk.WithHTTPClient(&jwksClient{k: k}),
		jwk.WithMinRefreshInterval(k.cfg.MinRefreshInterval),
		jwk.WithPostFetcher(jwk.PostFetchFunc(k.publish)))
	if err != nil {
		k.mu.Unlock()
		stop()
		return nil, err
	}
	k.cache, k.stopCache = cache, stop
	k.mu.Unlock()
	if _, err := cache.Refresh(ctx, uri); err != nil {
		return nil, err
	}
	snap := k.snap.Load()
	if snap == nil {
		return nil, fmt.Errorf("resource: JWK Set not loaded")
	}
	return snap, nil
}

// publish is the jwk.Cache post-fetch hook: every successful fetch, in the
// background or not, replaces the snapshot. A set without usable keys is
// an error, so the last good keys stay.
func (k *RemoteKeys) publish(_ string, set jwk.Set) (jwk.Set, error) {
	snap, err := convertSet(set)
	if err != nil {
		return nil, err
	}
	k.snap.Store(snap)
	return set, nil
}

// errSink adapts a function to jwk.ErrSink.
type errSink func(error)

func (f errSink) Error(err error) { f(err) }

func (k *RemoteKeys) refreshFailed(err error) {
	if k.cfg.Logger != nil {
		k.cfg.Logger.Warn("mcpauth resource: JWK Set refresh failed; keeping the last good keys", "issuer", k.cfg.Issuer, "error", err)
	}
}

// jwksClient adapts the SSRF-safe fetcher to the client interface
// jwk.Cache uses, so background refreshes get the same guards: address
// checks, size cap, status and content type checks, and a timeout.
type jwksClient struct{ k *RemoteKeys }

func (c *jwksClient) Get(u string) (*http.Response, error) {
	ctx, cancel := c.k.fetchContext()
	defer cancel()
	resp, err := c.k.fetcher.Get(ctx, u, jwksAccept)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Header:        resp.Header,
		Body:          io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)),
	}, nil
}
