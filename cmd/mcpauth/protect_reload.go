package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/resource"
)

// protectReloadable are the keys of `mcpauth protect` a reload applies:
// the scope policy and requirements, the allowed origins, the issuers and
// their profiles (their keys are fetched anew), introspection, DPoP's
// mode and algorithms, the token exchange for --pass-upstream-token, and
// the access log, the rate limits (whose in-memory buckets start full
// again). Every other key (the listeners, the upstream, the
// resource, the session key, Redis, logging, the insecure switch and any
// key not listed here) takes effect only at a restart: a reload that
// changes one logs it and keeps the running value.
var protectReloadable = map[string]bool{
	"scopes": true, "require": true, "policy": true, "allow-origin": true,
	"issuer": true, "issuer-profile": true, "issuer-audience": true, "issuer-typ": true, "issuer-scope-claims": true,
	"issuer-client-claim": true, "issuer-require": true, "issuer-tenant": true, "issuer-client": true,
	"issuer-insecure-accept-missing-audience": true,
	"introspect-url": true, "introspect-client": true, "dpop": true, "dpop-algs": true, "dpop-nonce": true,
	"pass-upstream-token": true, "exchange-token-url": true, "exchange-client-id": true, "exchange-client-secret": true,
	"upstream-audience": true, "exchange-cache-ttl": true, "access-log": true,
	"rate-limits": true, "rate-per-identity": true, "rate-identity-burst": true,
}

// protectRuntime is what a running `mcpauth protect` keeps across
// reloads: the address, the upstream, the metrics, and what every
// generation shares so that sessions and DPoP proofs outlive a reload (the
// random session key when --session-key is not given, the in-memory
// replay store when Redis is not).
type protectRuntime struct {
	args       []string
	addr       net.Addr
	upstream   *url.URL
	logger     *slog.Logger
	metrics    *proxyMetrics
	tracer     trace.TracerProvider // nil: tracing off
	sessionKey []byte
	connectKey []byte // seals --connect-tool's requestState without --connect-state-key
	replay     replay.Store
	live       *liveHandler
	view       *configView
}

func newProtectRuntime(args []string, addr net.Addr, upstream *url.URL, logger *slog.Logger) (*protectRuntime, error) {
	r, err := replay.NewMemory(replay.MemoryConfig{})
	if err != nil {
		return nil, err
	}
	return &protectRuntime{args: args, addr: addr, upstream: upstream, logger: logger, sessionKey: randomKey(), connectKey: randomKey(), replay: r}, nil
}

// generation builds the proxy of one configuration.
func (rt *protectRuntime) generation(f *protectFlags) (*generation, *resource.Verifier, error) {
	f.pass.tracer = rt.tracer
	f.pass.forConnect = len(f.connect.tools) > 0
	pass, err := f.pass.config(f.issuers, f.insecureHTTP, os.Getenv, rt.logger)
	if err != nil {
		return nil, nil, err
	}
	connect, err := f.connect.config(&f.pass, f.issuers, f.insecureHTTP, os.Getenv, rt.logger, rt.connectKey, rt.replay)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := f.resourceConfig(rt.addr, rt.upstream, rt.logger)
	if err != nil {
		return nil, nil, err
	}
	if cfg.SessionKey == nil {
		cfg.SessionKey = rt.sessionKey
	}
	rc, err := f.dpopConfig(&cfg)
	if err != nil {
		return nil, nil, err
	}
	closeLimits, err := f.limits.apply(&cfg)
	if err != nil {
		if rc != nil {
			_ = rc.Close()
		}
		return nil, nil, err
	}
	cfg.TracerProvider = rt.tracer
	if cfg.DPoP.Mode != resource.DPoPDisabled && cfg.DPoP.Replay == nil {
		cfg.DPoP.Replay = rt.replay
	}
	h, v, err := protectHandlerWith(cfg, rt.upstream, pass, connect, rt.metrics, rt.logger, time.Now)
	if err != nil {
		if rc != nil {
			_ = rc.Close()
		}
		closeLimits()
		return nil, nil, err
	}
	checks := []healthCheck{{"issuers", v.Ready}}
	if rc != nil {
		checks = append(checks, healthCheck{"redis", func(ctx context.Context) error { return rc.Ping(ctx).Err() }})
	}
	g := &generation{handler: h, checks: checks, close: func() {
		_ = v.Close()
		if rc != nil {
			_ = rc.Close()
		}
		closeLimits()
	}}
	return g, v, nil
}

// reload reads the configuration again and, when it changes keys a
// reload applies and is valid, swaps in a new generation; otherwise the
// running one stays. Each outcome is logged.
func (rt *protectRuntime) reload() {
	rt.logger.Info("reloading the configuration")
	f, view, applied, ok := reloadPlan(rt.logger, rt.view, func(k string) bool { return protectReloadable[k] },
		func(pinned map[string]*setting) (*protectFlags, *configView, error) {
			f, err := parseProtectLayers(rt.args, io.Discard, layerOptions{getenv: os.Getenv, pinned: pinned})
			if err != nil {
				return nil, nil, err
			}
			return f, f.ops.view, nil
		})
	if !ok {
		return
	}
	g, _, err := rt.generation(f)
	if err != nil {
		rt.logger.Error("configuration not reloaded: the new one is invalid; the running one stays", "err", err)
		return
	}
	rt.live.swap(g)
	rt.view = view
	rt.logger.Info("configuration reloaded", "keys", strings.Join(applied, " "))
}
