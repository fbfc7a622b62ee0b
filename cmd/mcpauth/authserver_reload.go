package main

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/redisreplay"
	"github.com/mcpauth/mcpauth/replay"
)

// authserverReloadable are the keys of `mcpauth authserver` a reload
// applies: policies and allow-lists, the clients, scopes, resources and
// lifetimes, the upstream and connect providers and the vault keys, the
// trusted issuers, the
// downstream APIs and the rate limits. Every other key (the listeners, the
// issuer, the storage and its keys, Redis, the signing algorithm, logging,
// the insecure switches and any key not listed here) takes effect only at
// a restart: a reload that changes one logs it and keeps the running value.
var authserverReloadable = map[string]bool{
	"scopes": true, "consent": true, "client": true, "token-ttl": true, "refresh-ttl": true,
	"cimd-allow-host": true, "no-cimd": true, "no-registration": true, "resource": true, "remember-consent": true,
	"upstream": true, "upstream-realm": true, "upstream-tenant": true, "upstream-allow-tenant": true, "upstream-authorization-url": true,
	"upstream-token-url": true, "upstream-userinfo-url": true, "upstream-emails-url": true, "upstream-auth-param": true,
	"upstream-github-org": true, "upstream-github-team": true, "grant-policy": true, "upstream-client-id": true,
	"upstream-client-secret": true, "upstream-client-key": true, "upstream-client-key-id": true, "upstream-scopes": true,
	"upstream-groups-claim": true, "allow-email-domain": true, "allow-user": true, "allow-group": true,
	"allow-any-user": true, "vault-key": true, "upstream-audience": true, "exchange-client": true,
	"downstream-api": true, "downstream-client": true, "downstream-token-ttl": true,
	"rate-per-ip": true, "rate-per-client": true, "rate-burst": true, "rate-browser": true, "rate-browser-burst": true,
	"trusted-proxy": true, "trusted-proxy-header": true, "dpop-nonce": true, "no-dpop": true,
	"trusted-issuer": true, "trusted-idjag-issuer": true,
	"connect": true, "connect-client-id": true, "connect-client-secret": true, "connect-scopes": true,
	"connect-auth-param": true, "connect-display-name": true,
}

// authserverRuntime is what a running `mcpauth authserver` keeps across
// reloads: the listen address, the storage and replay store every
// generation shares (so no grant, key or replayed proof is forgotten), and
// the current generation.
type authserverRuntime struct {
	args   []string
	addr   net.Addr
	logger *slog.Logger

	storage authserver.Storage
	replay  replay.Store
	pinger  func(context.Context) error
	redis   *redis.Client
	nonce   []byte // the random DPoP nonce key, when --dpop-nonce has none
	live    *liveHandler
	view    *configView
	// observer and tracer are the metrics and the tracer provider every
	// generation reports to (nil when off).
	observer authserver.Observer
	tracer   trace.TracerProvider
}

// openShared opens what every generation shares: the storage (memory
// when no --data-dir or --database-url), the replay store (Redis, or
// memory) and a random DPoP nonce key; it sets them in cfg.
func (rt *authserverRuntime) openShared(ctx context.Context, f *authserverFlags, cfg *authserver.Config) (func(), error) {
	var closers []io.Closer
	closeAll := func() {
		for _, c := range closers {
			_ = c.Close()
		}
	}
	st, closer, err := f.openStorage(ctx)
	if err != nil {
		return nil, err
	}
	if closer != nil {
		closers = append(closers, closer)
		if p, ok := closer.(interface{ Ping(context.Context) error }); ok {
			rt.pinger = p.Ping
		}
	} else {
		st = authserver.NewMemoryStore().Storage()
	}
	rt.storage = st
	if f.redisURL != "" {
		c, err := openRedis("--redis-url", f.redisURL)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, c)
		rt.redis, rt.replay = c, redisreplay.New(c, "mcpauth:as:"+cfg.Issuer+":")
	} else if rt.replay, err = replay.NewMemory(replay.MemoryConfig{}); err != nil {
		closeAll()
		return nil, err
	}
	rt.nonce = randomKey()
	rt.share(cfg)
	return closeAll, nil
}

// share sets the shared state in cfg.
func (rt *authserverRuntime) share(cfg *authserver.Config) {
	cfg.Storage, cfg.Replay = rt.storage, rt.replay
	cfg.Observer, cfg.TracerProvider = rt.observer, rt.tracer
	if cfg.DPoP != nil && cfg.DPoP.RequireNonce && cfg.DPoP.NonceKey == nil {
		cfg.DPoP.NonceKey = rt.nonce
	}
}

// generation builds the server of one configuration: the handler (with
// its faults), the readiness checks and what closes it.
func (rt *authserverRuntime) generation(f *authserverFlags, cfg authserver.Config) (*generation, *authserver.Server, error) {
	faults, err := f.injectedFaults()
	if err != nil {
		closeLogin(&cfg)
		return nil, nil, err
	}
	as, err := authserver.New(cfg)
	if err != nil {
		closeLogin(&cfg)
		return nil, nil, err
	}
	g := &generation{
		handler: accessLog(rt.logger, authservertest.InjectFaults(as, faults...)),
		close: func() {
			_ = as.Close()
			closeLogin(&cfg)
		},
		checks: rt.checks(as),
	}
	return g, as, nil
}

// checks are the readiness checks: the storage answers, a signing key is
// in use, Redis answers, and what the server depends on upstream (the
// login provider's metadata and key set, the trusted issuers' key sets) is
// fetched and fresh (authserver.Server.ReadyChecks).
func (rt *authserverRuntime) checks(as *authserver.Server) []healthCheck {
	checks := []healthCheck{
		{"storage", func(ctx context.Context) error {
			if rt.pinger != nil {
				return rt.pinger(ctx)
			}
			_, err := rt.storage.Keys.SigningKeys(ctx)
			return err
		}},
		{"signing_keys", func(ctx context.Context) error {
			keys, err := rt.storage.Keys.SigningKeys(ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			for _, k := range keys {
				if !k.ActiveAt.After(now) && (k.RetireAt.IsZero() || k.RetireAt.After(now)) {
					return nil
				}
			}
			return errors.New("no signing key is active")
		}},
	}
	if rt.redis != nil {
		checks = append(checks, healthCheck{"redis", func(ctx context.Context) error { return rt.redis.Ping(ctx).Err() }})
	}
	for _, c := range as.ReadyChecks() {
		checks = append(checks, healthCheck{c.Name, c.Check})
	}
	return checks
}

// reload reads the configuration again and, when it changes keys a
// reload applies and is valid, swaps in a new generation; otherwise the
// running one stays. Each outcome is logged.
func (rt *authserverRuntime) reload() {
	rt.logger.Info("reloading the configuration")
	f, view, applied, ok := reloadPlan(rt.logger, rt.view, func(k string) bool { return authserverReloadable[k] },
		func(pinned map[string]*setting) (*authserverFlags, *configView, error) {
			f, err := parseAuthserverLayers(rt.args, io.Discard, layerOptions{getenv: os.Getenv, pinned: pinned})
			if err != nil {
				return nil, nil, err
			}
			return f, f.ops.view, nil
		})
	if !ok {
		return
	}
	cfg, err := f.config(rt.addr, rt.logger)
	var g *generation
	if err == nil {
		rt.share(&cfg)
		g, _, err = rt.generation(f, cfg)
	} else {
		closeLogin(&cfg)
	}
	if err != nil {
		rt.logger.Error("configuration not reloaded: the new one is invalid; the running one stays", "err", err)
		return
	}
	rt.live.swap(g)
	rt.view = view
	rt.logger.Info("configuration reloaded", "keys", strings.Join(applied, " "))
}

// randomKey returns 32 random bytes.
func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand, Go 1.24+)
	return k
}
