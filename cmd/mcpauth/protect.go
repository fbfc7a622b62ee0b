package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/resource"
)

func protectCommand() command {
	return command{
		name:    "protect",
		summary: "put OAuth 2.1 in front of any Streamable HTTP MCP server (a reverse proxy)",
		run:     runProtect,
	}
}

const protectDescription = `
A reverse proxy that protects an existing Streamable HTTP MCP server with mcpauth's resource
middleware, the way oauth2-proxy fronts web applications. Every request must carry an access
token from one of the --issuer authorization servers, with this server (--resource) as its
audience and the scopes --require and --policy ask for. The proxy serves the RFC 9728 metadata
at the path-inserted URL, answers 401/403 with the challenges MCP clients follow, streams event
streams unbuffered, never forwards the Authorization header, and replaces any inbound
X-Forwarded-User/-Email/-Preferred-Username/-Scopes/-Client-Id/-Issuer (and X-Auth-Request-*)
headers with values from the validated token; a header it sets or removes goes in every
spelling that servers read as the same name (X_Forwarded_User, x-forwarded_user). Session IDs
the upstream issues are bound to the user who opened the session: another user's token with one
gets 404. Give every protect process that serves one resource the same --session-key (and the
same --resource) so they accept each other's sessions; without it each process makes a random
key, and sessions end with the process.

With --pass-upstream-token HEADER the protected server also gets the user's access token at the
upstream identity provider (the analogue of oauth2-proxy's --pass-access-token): after verifying
the MCP token, protect exchanges it (RFC 8693) at --exchange-token-url as --exchange-client-id for
--upstream-audience and sends the result in HEADER, replacing any inbound value; the MCP token is
never forwarded. The authorization server refusing the token (revoked grant, no upstream token)
gives the client 401 invalid_token, so it logs in again; an unreachable one 503; anything else 502.

example:
  mcpauth protect --upstream http://127.0.0.1:3000/mcp --issuer http://127.0.0.1:9000 \
      --insecure-http --scopes "mcp:tools" --require mcp:tools
  RS_SECRET=… mcpauth protect --upstream http://127.0.0.1:3000/mcp --issuer http://127.0.0.1:9000 \
      --insecure-http --pass-upstream-token X-Upstream-Token --exchange-token-url http://127.0.0.1:9000/token \
      --exchange-client-id mcp-server --exchange-client-secret env:RS_SECRET --upstream-audience github`

type protectFlags struct {
	addr, upstream, resource, scopes, require, policy string
	introspectURL, introspectClient, metricsAddr      string
	sessionKey                                        string
	issuers, origins                                  listFlag
	issuerOpts                                        issuerFlags // each --issuer and the --issuer-* flags after it
	insecureHTTP                                      bool
	grace                                             time.Duration
	log                                               logFlags
	perf                                              perfFlags
	pass                                              passUpstreamFlags
	limits                                            limitsFlags
	connect                                           protectConnectFlags
	// DPoP, its proof algorithms, its replay store shared by replicas, and
	// server nonces.
	dpop, dpopAlgs, redisURL, dpopNonceKey string
	dpopNonce                              bool
	// The configuration file, TLS and the admin listener.
	ops opsFlags
}

func parseProtectFlags(args []string, stderr io.Writer) (*protectFlags, error) {
	return parseProtectLayers(args, stderr, layerOptions{getenv: os.Getenv})
}

// parseProtectLayers parses the command line over the environment and the
// --config file.
func parseProtectLayers(args []string, stderr io.Writer, opts layerOptions) (*protectFlags, error) {
	f := &protectFlags{}
	fs := newFlagSet("protect", "--upstream URL --issuer URL [flags]", protectDescription+connectProtectDescription, stderr)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks one)")
	fs.StringVar(&f.upstream, "upstream", "", "the MCP endpoint to protect, e.g. http://127.0.0.1:3000/mcp (required)")
	fs.StringVar(&f.resource, "resource", "", "this server's canonical URL, the token audience; default http://<addr> + the upstream's path")
	f.issuerOpts.register(fs, &f.issuers)
	fs.StringVar(&f.scopes, "scopes", "", "scopes advertised in the metadata's scopes_supported (spaces or commas)")
	fs.StringVar(&f.require, "require", "", "scopes every request needs (spaces or commas)")
	fs.StringVar(&f.policy, "policy", "", "JSON scope policy file: per method, tool, resource and prompt (see resource.ParsePolicy)")
	fs.StringVar(&f.introspectURL, "introspect-url", "", "RFC 7662 introspection endpoint for opaque (non-JWT) tokens")
	fs.StringVar(&f.introspectClient, "introspect-client", "", "`ID:SECRET` to authenticate to the introspection endpoint; SECRET may be env:VAR")
	fs.StringVar(&f.sessionKey, "session-key", "", "env:VAR: the key (at least 32 bytes) that binds session IDs to users, from $VAR; the same for every replica (default: random per process)")
	fs.Var(&f.origins, "allow-origin", "an Origin allowed besides the resource's own, e.g. https://app.example.com (repeatable)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this address (default: off)")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow plain-http issuer, resource and introspection URLs on loopback hosts")
	fs.StringVar(&f.dpop, "dpop", "off", "DPoP-bound tokens (RFC 9449): off, allowed (Bearer too) or required")
	fs.BoolVar(&f.dpopNonce, "dpop-nonce", false, "require server-provided DPoP nonces in proofs (RFC 9449 §9): 401 use_dpop_nonce with a DPoP-Nonce header otherwise")
	registerDPoPNonceKey(fs, &f.dpopNonceKey)
	fs.StringVar(&f.dpopAlgs, "dpop-algs", "", "with --dpop: the accepted proof algorithms, advertised in the challenge and the metadata (spaces or commas; default ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA)")
	fs.StringVar(&f.redisURL, "redis-url", "", "record DPoP proofs on Redis at this `redis://` URL, shared by every replica of this resource (env:VAR reads $VAR); unreachable Redis refuses proofs")
	fs.DurationVar(&f.grace, "shutdown-timeout", 10*time.Second, "how long requests in flight (streams too) may finish on shutdown")
	f.pass.register(fs)
	f.limits.register(fs)
	f.connect.register(fs)
	f.log.register(fs, "info")
	f.perf.register(fs)
	f.ops.register(fs)
	var err error
	if f.ops.view, err = parseLayered(fs, "protect", args, opts); err != nil {
		return nil, err
	}
	if !f.ops.printConfig && (f.upstream == "" || len(f.issuers) == 0) {
		fmt.Fprintln(stderr, "--upstream and at least one --issuer are required")
		fs.Usage()
		return nil, errUsage
	}
	return f, nil
}

// resourceConfig turns the flags into the middleware's configuration, for
// a proxy listening on addr.
func (f *protectFlags) resourceConfig(addr net.Addr, upstream *url.URL, logger *slog.Logger) (resource.Config, error) {
	cfg := resource.Config{
		Resource:                  f.resource,
		ScopesSupported:           fields(f.scopes),
		AllowedOrigins:            f.origins,
		InsecureAllowHTTPLoopback: f.insecureHTTP,
		Logger:                    f.perf.decisionLogger(logger),
	}
	if cfg.Resource == "" {
		cfg.Resource = "http://" + addr.String() + upstream.EscapedPath()
	}
	if err := checkServiceURL("--resource", cfg.Resource, f.insecureHTTP); err != nil {
		return cfg, err
	}
	var err error
	if cfg.Issuers, err = f.issuerOpts.issuers(f.insecureHTTP, logger); err != nil {
		return cfg, err
	}
	policy := &resource.Policy{}
	if f.policy != "" {
		var err error
		if policy, err = parseFile("--policy", f.policy, resource.ParsePolicy); err != nil {
			return cfg, err
		}
	}
	policy.Default = append(policy.Default, fields(f.require)...)
	if f.policy != "" || len(policy.Default) > 0 {
		cfg.Policy = policy
	}
	if f.sessionKey != "" {
		if !isSecretRef(f.sessionKey) {
			return cfg, fmt.Errorf("--session-key: want env:VAR or file:PATH (a key on the command line would show in the process list)")
		}
		key, err := secretValue("--session-key", f.sessionKey, os.Getenv)
		if err != nil || len(key) < resource.MinSessionKeyBytes {
			return cfg, fmt.Errorf("--session-key: %s must hold at least %d bytes", f.sessionKey, resource.MinSessionKeyBytes)
		}
		cfg.SessionKey = []byte(key)
	}
	if f.introspectURL != "" {
		if err := checkServiceURL("--introspect-url", f.introspectURL, f.insecureHTTP); err != nil {
			return cfg, err
		}
		id, secret, ok := strings.Cut(f.introspectClient, ":")
		if !ok || id == "" || secret == "" {
			return cfg, fmt.Errorf("--introspect-client: want ID:SECRET with --introspect-url")
		}
		secret, err := secretValue("--introspect-client", secret, os.Getenv)
		if err != nil {
			return cfg, err
		}
		cfg.Introspection = &resource.IntrospectionConfig{Endpoint: f.introspectURL, ClientID: id, ClientSecret: secret}
	}
	return cfg, nil
}

// protectHandler assembles the proxy: metadata and the protected endpoint on
// a mux, the middleware in front of the reverse proxy (and, with pass, of
// the token exchange that gives the proxy the upstream token), and the
// metrics.
func protectHandler(cfg resource.Config, upstream *url.URL, pass *upstreamTokenPass, m *proxyMetrics, logger *slog.Logger, now func() time.Time) (http.Handler, *resource.Verifier, error) {
	return protectHandlerWith(cfg, upstream, pass, nil, m, logger, now)
}

// protectHandlerWith is protectHandler with the --connect-tool gate (nil
// without).
func protectHandlerWith(cfg resource.Config, upstream *url.URL, pass *upstreamTokenPass, connect *connectGate, m *proxyMetrics, logger *slog.Logger, now func() time.Time) (http.Handler, *resource.Verifier, error) {
	var transport http.RoundTripper = revproxy.Transport()
	if m != nil {
		cfg.Audit = m.audit
		transport = &timedTransport{base: transport, m: m, now: now}
	}
	if cfg.TracerProvider != nil {
		transport = newTracedTransport(transport, cfg.TracerProvider)
	}
	v, err := resource.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	var next http.Handler
	if pass != nil {
		next = pass.wrap(v, newProxy(upstream, transport, logger, pass.header, connect.connectHeaders()...))
	} else {
		next = newProxy(upstream, transport, logger, "", connect.connectHeaders()...)
	}
	if connect != nil {
		next = connect.wrap(v, cmp.Or(cfg.MaxBodyBytes, resource.DefaultMaxBodyBytes), next)
	}
	next = revproxy.FullDuplex(next)
	mux := http.NewServeMux()
	v.Mount(mux, next)
	h := endpointFirst(cfg.Resource, v.Middleware(next), mux)
	if m != nil {
		h = m.instrument(h, now)
	}
	return h, v, nil
}

// endpointFirst sends a request for the protected endpoint's path, as the
// resource URL spells it, straight to endpoint, the handler mux has for
// that path, and every other request (the metadata, other paths, a path
// with escapes or dot segments, CONNECT) to mux, which routes it as
// before: the proxy's one busy path skips the pattern lookup.
func endpointFirst(resource string, endpoint http.Handler, mux *http.ServeMux) http.Handler {
	u, err := url.Parse(resource)
	if err != nil {
		return mux
	}
	p := cmp.Or(u.Path, "/")
	if u.RawPath != "" || (p != "/" && path.Clean(p) != strings.TrimSuffix(p, "/")) {
		return mux // a path ServeMux would clean or unescape: let it decide
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == p && r.URL.RawPath == "" && r.Method != http.MethodConnect {
			endpoint.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func runProtect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	hup, stop := reloadSignals()
	defer stop()
	return serveProtect(ctx, args, stdout, stderr, hup)
}

// serveProtect runs the command, reloading its configuration on each
// signal on hup.
func serveProtect(ctx context.Context, args []string, stdout, stderr io.Writer, hup <-chan os.Signal) error {
	f, err := parseProtectFlags(args, stderr)
	if err != nil {
		return err
	}
	if f.ops.printConfig {
		return f.ops.view.print(stdout)
	}
	logger, err := f.log.logger(stderr)
	if err != nil {
		return err
	}
	upstream, err := url.Parse(f.upstream)
	if err != nil || (upstream.Scheme != "http" && upstream.Scheme != "https") || upstream.Host == "" {
		return fmt.Errorf("--upstream: %q is not an http(s) URL", f.upstream)
	}
	ln, err := listen("--addr", f.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	rt, err := newProtectRuntime(args, ln.Addr(), upstream, logger)
	if err != nil {
		return err
	}
	tp, stopTracing, err := startTracing(ctx, "mcpauth-protect", logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	rt.tracer = tp
	servers, listeners := []*http.Server{}, []net.Listener{}
	if f.metricsAddr != "" {
		rt.metrics = newProxyMetrics()
		mln, err := listen("--metrics-addr", f.metricsAddr)
		if err != nil {
			return err
		}
		defer mln.Close()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", rt.metrics.Handler())
		servers, listeners = append(servers, streamingServer(mux, logger)), append(listeners, mln)
	}
	if psrv, pln, err := f.perf.pprofServer(logger); err != nil {
		return err
	} else if psrv != nil {
		defer pln.Close()
		servers, listeners = append(servers, psrv), append(listeners, pln)
	}
	g, v, err := rt.generation(f)
	if err != nil {
		return err
	}
	live := newLiveHandler(g)
	defer live.Close()
	rt.live, rt.view = live, f.ops.view
	srvs, err := f.ops.serve(ln, live, f.insecureHTTP, logger, func(h http.Handler) *http.Server { return streamingServer(h, logger) })
	if err != nil {
		return err
	}
	defer srvs.Close()
	logger.Info("protecting", "resource", v.Resource(), "upstream", upstream.Redacted(), "issuers", strings.Join(f.issuers, " "),
		"metadata", v.MetadataURL(), "require", f.require, "policy", f.policy, "pass_upstream_token", f.pass.header)
	ready := fmt.Sprintf("listening on %s://%s (resource %s, upstream %s", srvs.scheme, ln.Addr(), v.Resource(), upstream.Redacted())
	if rt.metrics != nil {
		ready += fmt.Sprintf(", metrics http://%s/metrics", listeners[0].Addr())
	}
	if f.ops.adminAddr != "" {
		ready += fmt.Sprintf(", admin http://%s", srvs.listeners[0].Addr())
	}
	fmt.Fprintln(stdout, ready+")")
	sctx, cancel := context.WithCancel(ctx)
	wait := onSignal(sctx, hup, func() {
		srvs.reload()
		rt.reload()
	})
	err = serveAll(ctx, logger, f.grace, append(servers, srvs.servers...), append(listeners, srvs.listeners...))
	cancel()
	wait()
	return err
}
