package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/bridge"
)

func bridgeCommand() command {
	return command{name: "bridge", summary: "connect a stdio-only MCP host to a remote Streamable HTTP server, with OAuth",
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			tty := openTerminal()
			if tty != nil {
				defer tty.Close()
			}
			return runBridgeTerminal(ctx, args, os.Stdin, tty, stdout, stderr)
		}}
}

const bridgeDescription = `
Relay newline-delimited JSON-RPC between this process's stdin/stdout and the Streamable HTTP MCP
server at URL, for MCP hosts that start servers only as local commands. stdout carries nothing
but JSON-RPC messages; logs and the authorization prompt go to stderr.

Authorization is that of 'mcpauth login', with the same flags and token store: a token kept by
'mcpauth login URL' is used (and refreshed) without a browser. Otherwise the first message the
server refuses starts a login; messages wait for it, at most --auth-timeout, and get a JSON-RPC
error saying what to do if it fails.

When stdin closes (or on SIGINT/SIGTERM), requests in flight get --grace to finish and are then
cancelled, the session (2025-11-25 servers) is deleted, and the bridge exits with status 0.
Status 1: the bridge could not start (bad URL, token store); status 2: bad flags.`

func runBridge(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runBridgeTerminal(ctx, args, stdin, nil, stdout, stderr)
}

// runBridgeTerminal is runBridge with the controlling terminal tty (nil
// when there is none), where URL elicitations are asked about.
func runBridgeTerminal(ctx context.Context, args []string, stdin io.Reader, tty io.ReadWriter, stdout, stderr io.Writer) error {
	f := &clientFlags{}
	fs := newFlagSet("bridge", "[flags] URL", bridgeDescription+"\n"+bridgeConnectDescription+"\n"+clientDescription+dpopDescription, stderr)
	registerWithout(fs, f.register, "timeout") // the bridge runs as long as the host does
	headers := headerFlag{h: http.Header{}, getenv: os.Getenv}
	fs.Var(&headers, "header", "extra header for every request, 'Name: value' (repeatable); ${VAR} in the value is read from the environment. "+
		"Refused: Authorization, Proxy-Authorization, Cookie, DPoP, hop-by-hop and framing headers, the MCP transport headers")
	authTimeout := fs.Duration("auth-timeout", 5*time.Minute, "how long a login may take, including your approval in the browser; waiting messages get an error after it")
	grace := fs.Duration("grace", bridge.DefaultGracePeriod, "on exit, how long requests in flight may go on before they are cancelled")
	maxMessage := fs.Int("max-message-size", bridge.DefaultMaxMessageSize, "largest message in bytes, in either direction; a larger answer becomes a JSON-RPC error")
	f.dpopFlags.register(fs)
	var prompt *connectPrompt
	if tty != nil {
		prompt = newConnectPrompt(tty, tty)
	} else {
		prompt = newConnectPrompt(strings.NewReader(""), stderr) // never read: nobody to ask
	}
	prompt.register(fs)
	pos, err := parseArgs(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := prompt.check(); err != nil {
		return err
	}
	if *authTimeout <= 0 || *grace <= 0 || *maxMessage <= 0 {
		return fmt.Errorf("%w: --auth-timeout, --grace and --max-message-size must be positive", errUsage)
	}
	if f.dpop, err = f.dpopFlags.config(); err != nil {
		return err
	}
	serverURL := pos[0]
	gate := &authGate{timeout: *authTimeout, now: time.Now}
	f.wrapAuthorizer = gate.wrap
	s, err := f.open(ctx, serverURL, stderr)
	if err != nil {
		return err
	}
	defer s.client.CloseIdleConnections()

	base := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	defer base.CloseIdleConnections()
	var rt http.RoundTripper = base
	if len(s.scopes) > 0 {
		rt = &scopeTransport{base: base, scopes: s.scopes}
	}
	authorizing, err := s.client.Transport(serverURL, rt)
	if err != nil {
		return err
	}
	bcfg := bridge.Config{
		URL:            serverURL,
		Transport:      authorizing,
		Header:         headers.h,
		MaxMessageSize: *maxMessage,
		GracePeriod:    *grace,
		AuthError:      authErrorMessage(loginCommandLine(f, serverURL), *authTimeout),
		Logger:         s.logger,

		MaxElicitationRounds: client.MaxElicitationRounds,
	}
	switch {
	case prompt.mode == "decline" || (prompt.mode == "ask" && tty != nil):
		bcfg.Elicit = newBridgeAsker(s.client, serverURL, prompt).elicit
	default: // print, or nobody to ask
		bcfg.OnURLElicitationRequired = bridgeElicitationNotice(s.client, serverURL, stderr)
	}
	b, err := bridge.New(bcfg)
	if err != nil {
		return err
	}
	if stdout == io.Writer(os.Stdout) {
		// A host that goes away must not kill the bridge with SIGPIPE
		// before it has cleaned up: a write to stdout fails instead.
		signal.Ignore(syscall.SIGPIPE)
		// The memory bound README states; process-wide, like the
		// signal, so only when this is the bridge process.
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(bridgeMemoryLimit(*maxMessage))
		}
	}
	s.logger.Info("bridge started", "url", serverURL)
	return b.Run(ctx, stdin, stdout)
}

// bridgeMemoryLimit is the bridge process's soft memory limit
// (runtime/debug.SetMemoryLimit) for messages of at most maxMessage bytes.
// internal/bridge holds a message at most twice while it arrives and
// reuses its buffers, so messages relayed one after another need at most
// about 3 × maxMessage (a spare buffer kept from an earlier message, and a
// larger message read in pieces and joined) besides the process's own few
// MiB. The garbage collector, pacing itself on the live heap, would let
// the garbage of earlier messages take the heap to twice that; the limit
// has it collect sooner. Several large messages in flight at once need
// more: the limit is soft, so the collector then runs more often and the
// heap grows as it must. GOMEMLIMIT in the environment overrides it.
func bridgeMemoryLimit(maxMessage int) int64 {
	return 3*int64(maxMessage) + bridgeBaseMemory
}

// bridgeBaseMemory is the part of bridgeMemoryLimit for everything but the
// messages: the runtime, TLS and HTTP connections and their buffers, the
// client.
const bridgeBaseMemory = 16 << 20

// registerWithout registers the flags register defines, except those named.
func registerWithout(fs *flag.FlagSet, register func(*flag.FlagSet), skip ...string) {
	all := flag.NewFlagSet("", flag.ContinueOnError)
	register(all)
	all.VisitAll(func(fl *flag.Flag) {
		for _, s := range skip {
			if fl.Name == s {
				return
			}
		}
		fs.Var(fl.Value, fl.Name, fl.Usage)
	})
}

// loginCommandLine is the `mcpauth login` command that gets a token the
// bridge will use: the flags that choose the token store, the client and
// the scopes (never the secret itself).
func loginCommandLine(f *clientFlags, serverURL string) string {
	parts := []string{"mcpauth login"}
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, "--"+name+" "+shellQuote(v))
		}
	}
	add("store", f.store)
	if f.tokenStore != "file" {
		add("token-store", f.tokenStore)
	}
	add("client-id", f.clientID)
	add("issuer", f.issuer)
	add("client-metadata-url", f.clientMetadataURL)
	add("scopes", f.scopes)
	if f.clientSecret != "" {
		parts = append(parts, "--client-secret …")
	}
	switch {
	case f.dpopFlags.keyFile != "":
		add("dpop-key", f.dpopFlags.keyFile)
	case f.dpopFlags.on:
		parts = append(parts, "--dpop")
	}
	if f.insecureHTTP {
		parts = append(parts, "--insecure-http")
	}
	if f.device {
		parts = append(parts, "--device")
	}
	return strings.Join(append(parts, shellQuote(serverURL)), " ")
}

// shellQuote quotes s for a POSIX shell when it needs it (the hint is
// text for the user to copy; nothing here runs a shell).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errAuthTimeout: no approval within --auth-timeout.
var errAuthTimeout = errors.New("no approval within --auth-timeout")

// authErrors are the client library's error classes, and the bridge's own
// timeout.
var authErrors = []error{
	errAuthTimeout, client.ErrConfig, client.ErrDiscovery, client.ErrAuthorization, client.ErrTokenRequest, client.ErrForbidden,
}

// authErrorMessage tells the user, through the host, what to do when
// authorization failed.
func authErrorMessage(login string, timeout time.Duration) func(error) (string, bool) {
	return func(err error) (string, bool) {
		if !slices.ContainsFunc(authErrors, func(e error) bool { return errors.Is(err, e) }) {
			return "", false
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the client's own error names what failed
		}
		if errors.Is(err, errAuthTimeout) || errors.Is(err, client.ErrAuthorization) && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Sprintf("authorization timed out: nobody approved the request within %v. Approve it in the browser when it opens, or run `%s` in a terminal first; the next message tries again", timeout, login), true
		}
		return fmt.Sprintf("authorization failed: %v. Run `%s` in a terminal to log in and see the details; the next message tries again", err, login), true
	}
}

// authGate wraps the Authorizer: each login gets at most timeout, and the
// messages that were already waiting when a login failed get that failure
// instead of opening the browser once each; the next message starts a new
// login.
type authGate struct {
	timeout time.Duration
	now     func() time.Time

	mu       sync.Mutex
	failedAt time.Time
	failure  error
}

func (g *authGate) wrap(a client.Authorizer) client.Authorizer {
	if l, ok := a.(*client.Loopback); ok {
		l.Timeout = g.timeout
	}
	return client.AuthorizerFunc(func(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
		if bridge.Unattended(ctx) {
			return nil, errors.New("no login while exiting")
		}
		if at, ok := bridge.ReceivedAt(ctx); ok {
			g.mu.Lock()
			failure, failedAt := g.failure, g.failedAt
			g.mu.Unlock()
			if failure != nil && !at.After(failedAt) {
				return nil, failure
			}
		}
		actx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		u, err := a.Authorize(actx, req)
		if err != nil && ctx.Err() == nil && actx.Err() != nil {
			err = errAuthTimeout
		}
		if ctx.Err() == nil { // a request cancelled by the host says nothing about the login
			g.mu.Lock()
			g.failure, g.failedAt = err, g.now()
			g.mu.Unlock()
		}
		return u, err
	})
}

// headerFlag collects --header values.
type headerFlag struct {
	h      http.Header
	getenv func(string) string
}

func (h *headerFlag) String() string { return "" }

// refusedHeaders are the headers --header may not set, and why.
var refusedHeaders = map[string]string{
	"Authorization":        "the bridge authorizes with OAuth through the token store (mcpauth login); a static credential would skip the audience binding, refresh and step-up",
	"Proxy-Authorization":  "proxy credentials belong in HTTPS_PROXY",
	"Cookie":               "a cookie is a browser session's ambient credential; the bridge sends only tokens issued for the server",
	"Dpop":                 "a DPoP proof is signed for one request (RFC 9449 §4.2); a fixed one is a replay",
	"Host":                 "set by the HTTP stack from URL",
	"Content-Length":       "framing: set by the HTTP stack",
	"Transfer-Encoding":    "framing: set by the HTTP stack",
	"Connection":           "hop-by-hop: set by the HTTP stack",
	"Keep-Alive":           "hop-by-hop: set by the HTTP stack",
	"Proxy-Connection":     "hop-by-hop: set by the HTTP stack",
	"Te":                   "hop-by-hop: set by the HTTP stack",
	"Trailer":              "hop-by-hop: set by the HTTP stack",
	"Upgrade":              "hop-by-hop: set by the HTTP stack",
	"Content-Type":         "set by the bridge",
	"Accept":               "set by the bridge",
	"Mcp-Session-Id":       "set by the bridge from the server's answer",
	"Mcp-Protocol-Version": "set by the bridge from the messages",
	"Mcp-Method":           "set by the bridge from the messages",
	"Mcp-Name":             "set by the bridge from the messages",
	"Last-Event-Id":        "set by the bridge",
}

func (h *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || !bridge.ValidHeaderName(name) {
		return fmt.Errorf("%q is not 'Name: value'", v)
	}
	canon := http.CanonicalHeaderKey(name)
	if why, bad := refusedHeaders[canon]; bad {
		return fmt.Errorf("%s is refused: %s", name, why)
	}
	if strings.HasPrefix(canon, "Mcp-Param-") {
		return fmt.Errorf("%s is refused: Mcp-Param-* headers mirror tool arguments", name)
	}
	value, err := expandEnv(value, h.getenv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if strings.ContainsFunc(value, func(c rune) bool { return (c < 0x20 && c != '\t') || c == 0x7f }) {
		return fmt.Errorf("%s: control character in the value", name)
	}
	h.h.Add(canon, value)
	return nil
}

// expandEnv replaces each ${NAME} in v with the environment variable NAME
// (as mcp-remote does), so that secrets stay out of the host's args; an
// unset variable is an error, not an empty value.
func expandEnv(v string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			b.WriteString(v)
			return b.String(), nil
		}
		j := strings.IndexByte(v[i:], '}')
		if j < 0 {
			return "", errors.New("unterminated ${")
		}
		name := v[i+2 : i+j]
		if !envName(name) {
			return "", fmt.Errorf("${%s}: not a variable name", name)
		}
		val := getenv(name)
		if val == "" {
			return "", fmt.Errorf("${%s}: the variable is not set", name)
		}
		b.WriteString(v[:i])
		b.WriteString(val)
		v = v[i+j+1:]
	}
}

func envName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
