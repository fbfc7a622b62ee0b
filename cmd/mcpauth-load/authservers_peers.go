package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// authServerNames are the servers -authservers can measure.
var authServerNames = []string{"mcpauth", "mcpauth-before", "floor", "hydra", "oidc-provider"}

// The clients every server registers, under the same names where the
// server lets us choose them.
const (
	asCCClient  = "cc"
	asCCSecret  = "cc-secret-for-the-load-run"
	asApp       = "app"
	asRedirect  = "http://127.0.0.1:1/cb"
	asScope     = "mcp:read"
	hydraUser   = "alice@example.com"
	hydraSecret = "mcpauth-load-system-secret-of-hydra"
)

// authServer is one authorization server process under load, with what
// the load needs to ask it for tokens and to check its answers.
type authServer struct {
	name           string
	issuer         string
	tokenURL       string
	authorizeURL   string
	ccSecret       string
	ccScope        string
	authScope      string     // the scope of the code flow's authorization request
	approve        url.Values // fields the login/consent form's approve button adds
	user           string     // the subject of the code flow's tokens
	ccAuthHasher   string     // how the server stores client secrets, for the report
	child          *loadgen.Protect
	keys           jose.JSONWebKeySet
	transport      *http.Transport
	closers        []func()
	refreshTokens  []string // one rotating chain per worker
	issuerTrailing bool     // "iss" may carry a trailing slash
}

func (a *authServer) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// stop stops the child process, reporting an unclean exit.
func (a *authServer) stop() error {
	if a.child == nil {
		return nil
	}
	// Connections the client dialed but never used keep a server's
	// graceful shutdown waiting.
	a.transport.CloseIdleConnections()
	err := a.child.Stop(stopGrace)
	if err != nil && a.name != "mcpauth" && a.name != "mcpauth-before" {
		// Peers are killed by SIGTERM without a clean exit status; only
		// mcpauth's shutdown is checked.
		return nil
	}
	return err
}

// asSetup is what starting the servers needs.
type asSetup struct {
	mcpauth, hydra, node, interopDir string
	mcpauthBefore                    string // the binary of "mcpauth-before"
	hydraIterations                  int
	hydraAlg, hydraDSN               string
	pprofAddr                        string
	mcpauthEnv                       []string
	conc                             int
}

// startAuthServer starts the server called name.
func startAuthServer(ctx context.Context, name string, s asSetup, tmp string) (*authServer, error) {
	a := &authServer{name: name, transport: &http.Transport{MaxIdleConnsPerHost: 4 * s.conc, MaxIdleConns: 8 * s.conc}}
	a.closers = append(a.closers, a.transport.CloseIdleConnections)
	var err error
	switch name {
	case "mcpauth":
		err = a.startMcpauth(ctx, s, s.mcpauth)
	case "mcpauth-before":
		if s.mcpauthBefore == "" {
			err = errors.New("-authservers mcpauth-before needs -mcpauth-before REF")
		} else {
			err = a.startMcpauth(ctx, s, s.mcpauthBefore)
		}
	case "floor":
		err = a.startFloor(ctx)
	case "hydra":
		err = a.startHydra(ctx, s, tmp)
	case "oidc-provider":
		err = a.startOIDCProvider(ctx, s)
	default:
		err = fmt.Errorf("-authservers: unknown server %q (known: %s)", name, strings.Join(authServerNames, ", "))
	}
	if err == nil {
		err = a.fetchKeys(ctx)
	}
	if err != nil {
		if a.child != nil {
			err = fmt.Errorf("%w\n%s", err, a.child.Tail())
			_ = a.child.Stop(stopGrace)
		}
		a.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

// startMcpauth runs `mcpauth authserver` in memory with the demo user
// (no upstream login: the consent page is the whole login), the two
// clients, and its per-address and per-client rate limits raised out of
// the way (the load comes from one address and one client).
func (a *authServer) startMcpauth(ctx context.Context, s asSetup, binary string) error {
	args := []string{"authserver", "--addr", "127.0.0.1:0", "--insecure-http", "--log-level", "warn",
		"--no-registration", "--no-cimd", "--consent", "consent", "--scopes", asScope,
		"--client", "id=" + asCCClient + ",secret=" + asCCSecret + ",grant=client_credentials,auth=client_secret_basic,allowed-scope=" + asScope,
		"--client", "id=" + asApp + ",redirect=" + asRedirect,
		"--rate-per-ip", "1e9", "--rate-per-client", "1e9", "--rate-burst", "1000000000",
		"--rate-browser", "1e9", "--rate-browser-burst", "1000000000"}
	if s.pprofAddr != "" && a.name == "mcpauth" {
		args = append(args, "--pprof-addr", s.pprofAddr)
	}
	child, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: binary, Args: args, Env: s.mcpauthEnv})
	if err != nil {
		return err
	}
	a.child = child
	// "listening on http://127.0.0.1:PORT (issuer http://127.0.0.1:PORT)"
	f := strings.Fields(strings.TrimPrefix(child.Ready, "listening on "))
	if len(f) == 0 {
		return fmt.Errorf("unexpected ready line %q", child.Ready)
	}
	a.issuer = f[0]
	a.tokenURL, a.authorizeURL = a.issuer+"/token", a.issuer+"/authorize"
	a.ccSecret, a.ccScope, a.authScope = asCCSecret, asScope, asScope
	a.approve = url.Values{"action": {"approve"}}
	a.user = "demo-user"
	a.ccAuthHasher = "SHA-256"
	return nil
}

// startOIDCProvider runs tools/interop/asload.mjs: panva oidc-provider in
// memory with the same clients and ES256 JWT access tokens.
func (a *authServer) startOIDCProvider(ctx context.Context, s asSetup) error {
	script := filepath.Join(s.interopDir, "asload.mjs")
	if _, err := os.Stat(filepath.Join(s.interopDir, "node_modules", "oidc-provider")); err != nil {
		return fmt.Errorf("oidc-provider is not installed in %s (make interop-tools): %w", s.interopDir, err)
	}
	child, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: s.node, Args: []string{script}})
	if err != nil {
		return err
	}
	a.child = child
	a.issuer = strings.TrimSpace(strings.TrimPrefix(child.Ready, "listening on "))
	a.tokenURL, a.authorizeURL = a.issuer+"/token", a.issuer+"/auth"
	a.ccSecret, a.ccScope, a.authScope = "cc-secret", asScope, asScope
	a.user = "alice"
	a.ccAuthHasher = "none (compared as stored)"
	return nil
}

// hydraPool is dsn with a connection pool for workers concurrent requests
// (max_conns, max_idle_conns: four per worker) unless it names one: with
// Hydra's default pool of a few connections, a token request that needs a
// second connection while every one is held waits on the others, and
// under 8 workers the token endpoint stops answering. "memory" is returned
// as it is.
func hydraPool(dsn string, workers int) (string, error) {
	if dsn == hydraMemoryDSN {
		return dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-hydra-dsn: want %q or a postgres:// URL", hydraMemoryDSN)
	}
	q := u.Query()
	for _, k := range []string{"max_conns", "max_idle_conns"} {
		if !q.Has(k) {
			q.Set(k, strconv.Itoa(4*max(1, workers)))
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// startHydra runs `hydra serve all` (in memory, or on the database of
// -hydra-dsn, which it migrates first) with JWT access tokens, a
// login and consent app in this process that signs hydraUser in and grants
// what was asked, and the same clients registered through its admin API.
// Client secrets are hashed the way Hydra does by default (PBKDF2,
// 25,000 iterations) unless -hydra-pbkdf2-iterations says otherwise; the
// access-token key is s.hydraAlg (ES256 like mcpauth's, created through
// the admin API before the first token; RS256 is Hydra's own default, a
// 4096-bit RSA key).
func (a *authServer) startHydra(ctx context.Context, s asSetup, tmp string) error {
	if _, err := os.Stat(s.hydra); err != nil {
		return fmt.Errorf("Ory Hydra is not built (make hydra): %w", err)
	}
	pub, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	adm, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	app := &hydraApp{admin: "http://" + adm, hc: &http.Client{Timeout: 30 * time.Second, Transport: a.transport}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	appSrv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = appSrv.Serve(ln) }()
	a.closers = append(a.closers, func() { _ = appSrv.Close() })
	appURL := "http://" + ln.Addr().String()
	pubHost, pubPort, _ := net.SplitHostPort(pub)
	admHost, admPort, _ := net.SplitHostPort(adm)
	pp, _ := strconv.Atoi(pubPort)
	ap, _ := strconv.Atoi(admPort)
	a.issuer = "http://" + pub
	oauth2 := map[string]any{}
	if s.hydraIterations > 0 {
		oauth2["hashers"] = map[string]any{"algorithm": "pbkdf2", "pbkdf2": map[string]any{"iterations": s.hydraIterations}}
		a.ccAuthHasher = fmt.Sprintf("PBKDF2, %d iterations (-hydra-pbkdf2-iterations)", s.hydraIterations)
	} else {
		a.ccAuthHasher = "PBKDF2, 25000 iterations (Hydra's default)"
	}
	dsn, err := hydraPool(s.hydraDSN, s.conc)
	if err != nil {
		return err
	}
	cfg := map[string]any{
		"dsn": dsn,
		"serve": map[string]any{
			"public": map[string]any{"host": pubHost, "port": pp},
			"admin":  map[string]any{"host": admHost, "port": ap},
		},
		"urls": map[string]any{
			"self":    map[string]any{"issuer": a.issuer},
			"login":   appURL + "/login",
			"consent": appURL + "/consent",
		},
		"strategies": map[string]any{"access_token": "jwt"},
		"secrets":    map[string]any{"system": []string{hydraSecret}},
		"log":        map[string]any{"level": "error"},
		"oauth2":     oauth2,
	}
	data, _ := json.Marshal(cfg)
	conf := filepath.Join(tmp, "hydra.json")
	if err := os.WriteFile(conf, data, 0o600); err != nil {
		return err
	}
	if s.hydraDSN != hydraMemoryDSN {
		// Hydra creates its tables only in memory; a database is migrated
		// by its own command first (the DSN from the file, not argv).
		mctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := exec.CommandContext(mctx, s.hydra, "migrate", "sql", "up", "--read-from-env", "--yes", "--config", conf).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("hydra migrate sql up: %w\n%s", err, out)
		}
	}
	child, err := loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: s.hydra,
		Args: []string{"serve", "all", "--dev", "--sqa-opt-out", "--config", conf}, ReadyURL: app.admin + "/health/ready", Ready: 60 * time.Second})
	if err != nil {
		return err
	}
	a.child = child
	a.tokenURL, a.authorizeURL = a.issuer+"/oauth2/token", a.issuer+"/oauth2/auth"
	a.ccSecret, a.ccScope, a.authScope = asCCSecret, asScope, "offline_access "+asScope
	a.user = hydraUser
	a.issuerTrailing = true
	if s.hydraAlg != "RS256" {
		if err := app.call(ctx, http.MethodPost, "/admin/keys/hydra.jwt.access-token",
			map[string]any{"alg": s.hydraAlg, "use": "sig", "kid": strings.ToLower(s.hydraAlg)}, nil, http.StatusCreated); err != nil {
			return fmt.Errorf("creating the %s access-token key: %w", s.hydraAlg, err)
		}
	}
	for _, c := range []map[string]any{
		{"client_id": asCCClient, "client_secret": asCCSecret, "grant_types": []string{"client_credentials"},
			"scope": asScope, "token_endpoint_auth_method": "client_secret_basic"},
		{"client_id": asApp, "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"scope": "offline_access " + asScope, "redirect_uris": []string{asRedirect}, "token_endpoint_auth_method": "none"},
	} {
		if err := app.call(ctx, http.MethodPost, "/admin/clients", c, nil, http.StatusCreated); err != nil {
			return fmt.Errorf("registering client %v: %w", c["client_id"], err)
		}
	}
	return nil
}

// hydraApp is the login and consent app of Hydra: every login challenge
// is accepted for hydraUser and every consent challenge granted the
// scopes asked for, through the admin API, and the browser sent on.
type hydraApp struct {
	admin string
	hc    *http.Client
}

func (h *hydraApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var redirect struct {
		RedirectTo string `json:"redirect_to"`
	}
	var err error
	switch r.URL.Path {
	case "/login":
		err = h.call(r.Context(), http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(r.URL.Query().Get("login_challenge")),
			map[string]any{"subject": hydraUser, "remember": false}, &redirect, http.StatusOK)
	case "/consent":
		challenge := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req struct {
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		if err = h.call(r.Context(), http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+challenge, nil, &req, http.StatusOK); err == nil {
			err = h.call(r.Context(), http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+challenge,
				map[string]any{"grant_scope": req.Scope, "grant_access_token_audience": req.Audience, "remember": false}, &redirect, http.StatusOK)
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil || redirect.RedirectTo == "" {
		http.Error(w, fmt.Sprintf("login app: %v", err), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, redirect.RedirectTo, http.StatusFound)
}

// call sends a JSON request to Hydra's admin API and decodes the answer
// into out, an error unless the status is want.
func (h *hydraApp) call(ctx context.Context, method, path string, body, out any, want int) error {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.admin+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// fetchKeys reads the server's JWK Set through its metadata (RFC 8414,
// or OpenID Connect Discovery), retrying while a server generates its
// keys on first use.
func (a *authServer) fetchKeys(ctx context.Context) error {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: a.transport}
	var lastErr error
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
			var meta struct {
				Issuer  string `json:"issuer"`
				JWKSURI string `json:"jwks_uri"`
			}
			if lastErr = getJSON(ctx, hc, a.issuer+p, &meta); lastErr != nil {
				continue
			}
			if strings.TrimSuffix(meta.Issuer, "/") != a.issuer || meta.JWKSURI == "" {
				lastErr = fmt.Errorf("%s: issuer %q, jwks_uri %q", p, meta.Issuer, meta.JWKSURI)
				continue
			}
			if lastErr = getJSON(ctx, hc, meta.JWKSURI, &a.keys); lastErr != nil {
				continue
			}
			if len(a.keys.Keys) == 0 {
				lastErr = errors.New("empty JWK Set")
				continue
			}
			return nil
		}
	}
	return lastErr
}

func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}
