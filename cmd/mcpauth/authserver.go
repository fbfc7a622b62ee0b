package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/clientmeta"
)

func authserverCommand() command {
	return command{
		name:    "authserver",
		summary: "run the OAuth 2.1 authorization server (demo user, or login at an OpenID Connect provider)",
		run:     runAuthserver,
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const authserverDescription = `
Runs the OAuth 2.1 authorization server: a demo user, or login at an OpenID Connect provider
(--upstream-*).`

// authserverFlags are the parsed command-line flags.
type authserverFlags struct {
	addr, issuer, scopes, consent, dataDir, signingAlg       string
	tokenTTL, refreshTTL                                     time.Duration
	clients, cimdAllowHosts, cimdLoopback, faults, resources listFlag
	insecureHTTP, rememberConsent, noRegistration, noCIMD    bool
	// Extensions: DPoP and the JWT-bearer grant's trusted issuers.
	dpopNonce, noDPoP                   bool
	trustedIssuers, trustedIDJAGIssuers listFlag
	workload                            workloadFlags
	log                                 logFlags
	upstream                            upstreamFlags
	vault                               vaultFlags
	connect                             connectFlags
	downstream                          downstreamFlags
	limits                              limitFlags
	device                              deviceFlags
	observe                             asObserveFlags
	admin                               adminFlags
	// Shared storage for several replicas.
	databaseURL, keyEncryptionKey, redisURL, dpopNonceKey string
	oldKeyEncryptionKeys                                  listFlag
	// The configuration file, TLS and the admin listener.
	ops opsFlags
	// --pprof-addr
	pprofAddr string
}

func parseAuthserverFlags(args []string, stderr io.Writer) (*authserverFlags, error) {
	return parseAuthserverLayers(args, stderr, layerOptions{getenv: os.Getenv})
}

// parseAuthserverLayers parses the command line over the environment and
// the --config file.
func parseAuthserverLayers(args []string, stderr io.Writer, opts layerOptions) (*authserverFlags, error) {
	f := &authserverFlags{}
	fs := newFlagSet("authserver", "[flags]", authserverDescription, stderr)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:9000", "listen address (host:port); port 0 picks a free port")
	fs.StringVar(&f.issuer, "issuer", "", "issuer identifier; default http://<listen address>")
	fs.StringVar(&f.scopes, "scopes", "mcp:read mcp:write", "supported scopes, separated by spaces or commas")
	fs.StringVar(&f.consent, "consent", "consent", "consent mode: auto (no page), consent (HTML page) or deny")
	fs.Var(&f.clients, "client", "pre-registered client `id=ID[,secret=S][,redirect=URI]...[,name=N][,auth=METHOD][,scope=DEFAULT]...[,allowed-scope=CEILING]...` (repeatable; secret=env:VAR reads $VAR; allowed-scope limits the scopes it may obtain)")
	fs.DurationVar(&f.tokenTTL, "token-ttl", authserver.DefaultAccessTokenTTL, "access token lifetime")
	fs.DurationVar(&f.refreshTTL, "refresh-ttl", authserver.DefaultRefreshTokenTTL, "refresh token family lifetime")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep keys, clients and grants in this directory (default: memory only)")
	fs.StringVar(&f.databaseURL, "database-url", "", "keep all state in PostgreSQL at this `postgres://` URL, shared by every replica (env:VAR reads $VAR); needs --key-encryption-key")
	fs.StringVar(&f.keyEncryptionKey, "key-encryption-key", "", "base64 of 32 random bytes sealing the signing keys in the database, the same on every replica (env:VAR reads $VAR)")
	fs.StringVar(&f.redisURL, "redis-url", "", "record DPoP proof, client assertion and JWT grant identifiers on Redis at this `redis://` URL, shared by every replica (env:VAR reads $VAR); unreachable Redis refuses them")
	fs.Var(&f.oldKeyEncryptionKeys, "old-key-encryption-key", "a previous --key-encryption-key that still opens keys sealed under it (repeatable; env:VAR reads $VAR)")
	fs.Var(&f.cimdAllowHosts, "cimd-allow-host", "only resolve client ID metadata documents from this host; *.example.com for subdomains (repeatable; default: any https host)")
	fs.Var(&f.cimdLoopback, "insecure-cimd-loopback", "fetch client_ids starting with `PREFIX=LOOPBACK_PREFIX` from a loopback origin, for local testing (repeatable)")
	fs.BoolVar(&f.noCIMD, "no-cimd", false, "turn client ID metadata documents off")
	fs.BoolVar(&f.noRegistration, "no-registration", false, "turn dynamic client registration off")
	fs.Var(&f.resources, "resource", "allowed resource indicator (repeatable; default: any https URI)")
	fs.StringVar(&f.signingAlg, "signing-alg", authserver.DefaultSigningAlgorithm, "access token signing algorithm: ES256, RS256 or EdDSA")
	fs.BoolVar(&f.rememberConsent, "remember-consent", false, "skip the consent page for a client the user approved before in this browser, on a navigation from this server's own site")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "allow a plain-http issuer (loopback hosts only)")
	fs.Var(&f.faults, "insecure-fault", "misbehave on purpose to test clients: "+faultNames()+" (repeatable)")
	f.log.register(fs, "info")
	f.upstream.register(fs)
	f.vault.register(fs)
	f.connect.register(fs)
	f.downstream.register(fs)
	f.limits.register(fs)
	f.device.register(fs)
	fs.BoolVar(&f.dpopNonce, "dpop-nonce", false, "require server-provided DPoP nonces at the token endpoint (RFC 9449 §8)")
	registerDPoPNonceKey(fs, &f.dpopNonceKey)
	fs.BoolVar(&f.noDPoP, "no-dpop", false, "turn DPoP off (every token is a Bearer token)")
	fs.Var(&f.trustedIssuers, "trusted-issuer", "accept workload identity JWTs from `ISSUER=JWKS_URL` with the JWT-bearer grant (repeatable; give each its --workload-rule)")
	fs.Var(&f.trustedIDJAGIssuers, "trusted-idjag-issuer", "accept ID-JAGs (Enterprise-Managed Authorization) from the IdP `ISSUER=JWKS_URL` (repeatable)")
	f.workload.register(fs)
	f.ops.register(fs)
	f.observe.register(fs)
	f.admin.register(fs)
	registerAuthserverPprof(fs, &f.pprofAddr)
	var err error
	if f.ops.view, err = parseLayered(fs, "authserver", args, opts); err != nil {
		return nil, err
	}
	return f, nil
}

// parseClient parses one --client value.
func parseClient(spec string) (authserver.Client, error) {
	var c authserver.Client
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return c, fmt.Errorf("--client: %q is not key=value", part)
		}
		switch k {
		case "id":
			c.ID = v
		case "secret":
			s, err := secretValue("--client", v, os.Getenv)
			if err != nil {
				return c, err
			}
			c.Secret = s
		case "redirect":
			c.RedirectURIs = append(c.RedirectURIs, v)
		case "name":
			c.Name = v
		case "auth":
			c.AuthMethod = v
		case "grant":
			c.GrantTypes = append(c.GrantTypes, v)
		case "jwks-uri":
			c.JWKSURI = v
		case "scope":
			c.DefaultScopes = append(c.DefaultScopes, v)
		case "allowed-scope":
			c.AllowedScopes = append(c.AllowedScopes, v)
		default:
			return c, fmt.Errorf("--client: unknown key %q (known: id, secret, redirect, name, auth, grant, jwks-uri, scope, allowed-scope)", k)
		}
	}
	if c.ID == "" {
		return c, errors.New("--client: id= is required")
	}
	return c, nil
}

// config turns the flags into an authserver configuration for a server
// listening on addr.
func (f *authserverFlags) config(addr net.Addr, logger *slog.Logger) (authserver.Config, error) {
	cfg := authserver.Config{
		Issuer:                           f.issuer,
		InsecureAllowHTTPLoopback:        f.insecureHTTP,
		Scopes:                           fields(f.scopes),
		Resources:                        f.resources,
		AccessTokenTTL:                   f.tokenTTL,
		RefreshTokenTTL:                  f.refreshTTL,
		SigningAlgorithm:                 f.signingAlg,
		RememberConsent:                  f.rememberConsent,
		DisableRegistration:              f.noRegistration,
		DisableClientIDMetadataDocuments: f.noCIMD,
		Logger:                           logger,
		Device:                           f.device.config(),
	}
	if cfg.Issuer == "" {
		cfg.Issuer = map[bool]string{true: "https", false: "http"}[f.ops.tlsCert != ""] + "://" + addr.String()
	}
	if u, err := url.Parse(cfg.Issuer); err == nil && u.Scheme == "http" && !f.insecureHTTP {
		return cfg, fmt.Errorf("issuer %s is plain http: pass --insecure-http (allowed for loopback addresses only)", cfg.Issuer)
	}
	var err error
	if cfg.Consent, err = authserver.ParseConsentMode(f.consent); err != nil {
		return cfg, err
	}
	for _, spec := range f.clients {
		c, err := parseClient(spec)
		if err != nil {
			return cfg, err
		}
		cfg.Clients = append(cfg.Clients, c)
	}
	if !f.noDPoP {
		cfg.DPoP = &authserver.DPoPConfig{RequireNonce: f.dpopNonce}
	}
	if f.dpopNonceKey != "" {
		if cfg.DPoP == nil {
			return cfg, errors.New("--dpop-nonce-key needs --dpop-nonce")
		}
		if cfg.DPoP.NonceKey, err = parseDPoPNonceKey(f.dpopNonce, f.dpopNonceKey); err != nil {
			return cfg, err
		}
	}
	cfg.KeyFetch.InsecureAllowHTTPLoopback = f.insecureHTTP
	if err := f.login(&cfg, logger); err != nil {
		return cfg, err
	}
	if cfg.DownstreamAPIs, err = f.downstream.config(); err != nil {
		return cfg, err
	}
	if cfg.RateLimit, cfg.TrustedProxies, err = f.limits.config(); err != nil {
		return cfg, err
	}
	for _, list := range []struct {
		flag  string
		specs listFlag
		kind  authserver.GrantKind
	}{{"--trusted-issuer", f.trustedIssuers, authserver.GrantWorkload}, {"--trusted-idjag-issuer", f.trustedIDJAGIssuers, authserver.GrantIDJAG}} {
		for _, spec := range list.specs {
			iss, jwks, err := cutPair(list.flag, spec, "ISSUER=JWKS_URL")
			if err != nil {
				return cfg, err
			}
			cfg.TrustedIssuers = append(cfg.TrustedIssuers, authserver.TrustedIssuer{Issuer: iss, JWKSURI: jwks, Kind: list.kind})
		}
	}
	if err := f.workload.apply(&cfg); err != nil {
		return cfg, err
	}
	if !f.noCIMD && (len(f.cimdAllowHosts) > 0 || len(f.cimdLoopback) > 0) {
		rc := clientmeta.ResolverConfig{}
		if len(f.cimdAllowHosts) > 0 {
			rc.TrustPolicy = clientmeta.AllowHosts(f.cimdAllowHosts...)
		}
		for _, m := range f.cimdLoopback {
			prefix, fetch, ok := strings.Cut(m, "=")
			if !ok {
				return cfg, fmt.Errorf("--insecure-cimd-loopback: %q is not PREFIX=LOOPBACK_PREFIX", m)
			}
			rc.InsecureLoopbackMappings = append(rc.InsecureLoopbackMappings, clientmeta.LoopbackMapping{ClientIDPrefix: prefix, FetchPrefix: fetch})
		}
		if cfg.ClientMetadata, err = clientmeta.NewResolver(rc); err != nil {
			return cfg, err
		}
	}
	if err := f.admin.apply(&cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func runAuthserver(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "grants" {
		return runGrants(ctx, args[1:], stdout, stderr)
	}
	hup, stop := reloadSignals()
	defer stop()
	return serveAuthserver(ctx, args, stdout, stderr, hup)
}

// serveAuthserver runs the command, reloading its configuration on each
// signal on hup.
func serveAuthserver(ctx context.Context, args []string, stdout, stderr io.Writer, hup <-chan os.Signal) error {
	f, err := parseAuthserverFlags(args, stderr)
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
	ln, err := listen("--addr", f.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	rt := &authserverRuntime{args: args, addr: ln.Addr(), logger: logger}
	cfg, err := f.config(ln.Addr(), logger)
	if err != nil {
		return err
	}
	closeShared, err := rt.openShared(ctx, f, &cfg)
	if err != nil {
		closeLogin(&cfg)
		return err
	}
	defer closeShared()
	obs, err := f.observe.start(ctx, &cfg, logger)
	if err != nil {
		return err
	}
	defer obs.close()
	rt.observer, rt.tracer = cfg.Observer, cfg.TracerProvider
	g, as, err := rt.generation(f, cfg)
	if err != nil {
		return err
	}
	live := newLiveHandler(g)
	defer live.Close()
	rt.live, rt.view = live, f.ops.view
	// The authorization server sends no event streams: whole requests and
	// answers are bounded too.
	srvs, err := f.ops.serve(ln, live, f.insecureHTTP, logger, func(h http.Handler) *http.Server {
		srv := streamingServer(h, logger)
		srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = 30*time.Second, 30*time.Second, 60*time.Second
		return srv
	})
	if err != nil {
		return err
	}
	defer srvs.Close()
	servers, listeners := append(srvs.servers, obs.servers...), append(srvs.listeners, obs.listeners...)
	if psrv, pln, err := (&perfFlags{pprofAddr: f.pprofAddr}).pprofServer(logger); err != nil {
		return err
	} else if psrv != nil {
		defer pln.Close()
		servers, listeners = append(servers, psrv), append(listeners, pln)
	}
	m := as.Metadata()
	logger.Info("authorization server ready", "issuer", as.Issuer(), "consent", cfg.Consent.String(),
		"clients", len(cfg.Clients), "scopes", strings.Join(cfg.Scopes, " "),
		"registration", m.RegistrationEndpoint != "", "client_id_metadata_documents", m.ClientIDMetadataDocumentSupported,
		"storage", f.storageName(), "replay", map[bool]string{true: "redis", false: "memory"}[f.redisURL != ""])
	if len(f.faults) > 0 {
		logger.Warn("answering with deliberate protocol violations, for client tests only", "faults", f.faults)
	}
	ready := fmt.Sprintf("listening on %s://%s (issuer %s", srvs.scheme, ln.Addr(), as.Issuer())
	if f.ops.adminAddr != "" {
		ready += fmt.Sprintf(", admin http://%s", srvs.listeners[0].Addr())
	}
	fmt.Fprintln(stdout, ready+")")
	if obs.metrics != "" {
		fmt.Fprintf(stdout, "metrics at %s\n", obs.metrics)
	}
	if cfg.Login != nil {
		logger.Info("users log in upstream", "upstream", cfg.Login.Issuer(), "callback", as.UpstreamCallbackURL())
		fmt.Fprintf(stdout, "upstream login at %s; register this redirect URI there: %s\n", cfg.Login.Issuer(), as.UpstreamCallbackURL())
	}
	printLogins(stdout, logger, as, &cfg)
	if len(cfg.Connect) > 0 {
		fmt.Fprintf(stdout, "users connect %s; register this redirect URI at each: %s\n",
			strings.Join(as.ConnectProviders(), ", "), as.ConnectCallbackURL())
	}
	for _, api := range cfg.DownstreamAPIs {
		logger.Info("tokens for a downstream API by token exchange", "resource", api.Resource,
			"scopes", strings.Join(api.Scopes, " "), "clients", len(api.Clients))
	}
	sctx, cancel := context.WithCancel(ctx)
	wait := onSignal(sctx, hup, func() {
		srvs.reload()
		rt.reload()
	})
	err = serveAll(ctx, logger, 5*time.Second, servers, listeners)
	cancel()
	wait()
	return err
}

// faultNames lists the names --insecure-fault accepts.
func faultNames() string {
	var names []string
	for _, f := range authservertest.Faults() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// injectedFaults parses --insecure-fault: the deliberate protocol
// violations the server's answers get, to test clients.
func (f *authserverFlags) injectedFaults() ([]authservertest.Fault, error) {
	var faults []authservertest.Fault
	for _, name := range f.faults {
		ft, err := authservertest.ParseFault(name)
		if err != nil {
			return nil, fmt.Errorf("--insecure-fault: %w", err)
		}
		faults = append(faults, ft)
	}
	return faults, nil
}

// accessLog logs method, path (never the query, which can carry codes) and
// status of each request.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		logger.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
