package client

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults of [Loopback].
const (
	DefaultLoopbackPath    = "/callback"
	DefaultLoopbackTimeout = 5 * time.Minute
)

// successPage is shown in the browser after the response arrived. It
// carries no token, code or state.
const successPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Authorization complete</title></head>
<body><p>Authorization complete. You can close this window and return to the application.</p></body></html>
`

// Loopback is an [Authorizer] for native applications (RFC 8252): it
// listens on 127.0.0.1 (never on all interfaces) on an ephemeral port for
// the duration of one authorization, opens the authorization URL in the
// system browser, accepts exactly one response carrying the request's
// state, answers it with a plain page that shows no token, and closes the
// listener. The zero value is ready to use.
type Loopback struct {
	// Path is the redirect URI's path. Empty means DefaultLoopbackPath.
	Path string
	// Port is the port to listen on. Zero means the port of the
	// loopback redirect URI the client registered at this authorization
	// server earlier, when it is free (some servers compare loopback ports
	// exactly, against RFC 8252 §7.3), else an ephemeral port (RFC 8252
	// §7.3: the authorization server accepts any port for a loopback IP
	// redirect).
	Port int
	// Timeout bounds the wait for the user. Zero means
	// DefaultLoopbackTimeout.
	Timeout time.Duration
	// Open shows the authorization URL to the user. Nil means
	// [OpenBrowser]; use [PrintURL] to print it instead.
	Open func(ctx context.Context, authURL string) error
}

// Authorize implements [Authorizer].
func (l *Loopback) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	path := cmp.Or(l.Path, DefaultLoopbackPath)
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("%w: Loopback.Path must be a path", ErrConfig)
	}
	ln, err := l.listen(ctx, req, path)
	if err != nil {
		return nil, fmt.Errorf("%w: listening on 127.0.0.1: %w", ErrNoBrowser, err)
	}
	defer ln.Close()
	redirectURI := "http://" + ln.Addr().String() + path
	authURL, err := req.Start(ctx, redirectURI)
	if err != nil {
		return nil, err
	}
	cb := &callback{path: path, state: req.State(), got: make(chan *url.URL, 1)}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		// Let the success page finish, then close; never wait long.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		<-served
	}()

	open := l.Open
	if open == nil {
		open = OpenBrowser
	}
	if err := open(ctx, authURL); err != nil {
		return nil, err
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = DefaultLoopbackTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case u := <-cb.got:
		return u, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w: %w", errTimeout, context.DeadlineExceeded)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// listen opens the listener on 127.0.0.1: on Port when set; else on the
// port of a registered redirect URI http://127.0.0.1:<port><path> when it
// is free; else on an ephemeral port.
func (l *Loopback) listen(ctx context.Context, req *AuthorizationRequest, path string) (net.Listener, error) {
	var lc net.ListenConfig
	if l.Port == 0 {
		for _, raw := range req.registeredRedirectURIs(ctx) {
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.EscapedPath() != path || u.RawQuery != "" {
				continue
			}
			if ln, err := lc.Listen(ctx, "tcp4", u.Host); err == nil {
				return ln, nil
			}
		}
	}
	return lc.Listen(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)))
}

// callback is the one-shot redirect handler.
type callback struct {
	path  string
	state string
	done  atomic.Bool
	got   chan *url.URL
}

// ServeHTTP accepts the first GET at the path carrying the request's state
// and ignores everything else.
func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	if r.Method != http.MethodGet || r.URL.Path != cb.path || r.URL.Query().Get("state") != cb.state {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if !cb.done.CompareAndSwap(false, true) {
		http.Error(w, "this authorization response was already received", http.StatusGone)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, successPage)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	cb.got <- &u // buffered: never blocks
}

// PrintURL returns an Open function for [Loopback] that prints the
// authorization URL to w instead of starting a browser.
func PrintURL(w io.Writer) func(ctx context.Context, authURL string) error {
	return func(_ context.Context, authURL string) error {
		_, err := fmt.Fprintf(w, "Open this URL in a browser to authorize:\n\n  %s\n\n", authURL)
		return err
	}
}

// OpenBrowser opens authURL in the system browser. It refuses anything but
// an absolute https URL (or http to a loopback host) without control
// characters, and executes the platform's opener
// (xdg-open; open on macOS; rundll32 url.dll,FileProtocolHandler on
// Windows) directly with the URL as one argument, never through a shell.
//
// It fails with an error wrapping [ErrNoBrowser] when the opener cannot
// be run or reports failure (xdg-open does when it finds no browser, as
// in an SSH session, a container or CI).
func OpenBrowser(ctx context.Context, authURL string) error {
	if err := checkBrowserURL(authURL); err != nil {
		return err
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", authURL)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", authURL)
	default:
		cmd = exec.CommandContext(ctx, "xdg-open", authURL)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: opening the browser: %w", ErrNoBrowser, err)
	}
	return nil
}

// checkBrowserURL applies the scheme allowlist before a URL reaches a
// browser or another program.
func checkBrowserURL(raw string) error {
	if strings.ContainsFunc(raw, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("%w: control character or space in URL", errUnsafeAuthorizationURL)
	}
	// The URL goes to the browser exactly as written, so its scheme must
	// be written in lower case, not merely parse as http(s).
	if !strings.HasPrefix(raw, "https://") && !strings.HasPrefix(raw, "http://") {
		return fmt.Errorf("%w: only https URLs are opened", errUnsafeAuthorizationURL)
	}
	if err := (oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: true}).CheckURL(raw); err != nil {
		return fmt.Errorf("%w: %w", errUnsafeAuthorizationURL, err)
	}
	return nil
}
