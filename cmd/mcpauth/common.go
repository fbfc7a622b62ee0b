package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// errUsage marks a usage mistake the command already explained (exit 2).
var errUsage = flag.ErrHelp

// newFlagSet returns a flag set whose -h output starts with the command's
// synopsis and description.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpauth "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mcpauth %s %s\n\n%s\n\nflags:\n", name, synopsis, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may appear before, between and after the
// positional arguments (`mcpauth call URL TOOL --args '{}'`) and checks the
// number of positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		if len(pos) < minPos {
			fmt.Fprintf(fs.Output(), "missing arguments\n")
		} else {
			fmt.Fprintf(fs.Output(), "unexpected arguments: %q\n", pos[minPos:])
		}
		fs.Usage()
		return nil, errUsage
	}
	return pos, nil
}

// helpRequested reports whether args ask for a command's help text.
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "--h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// logFlags are --log-format and --log-level, shared by the long-running
// commands.
type logFlags struct{ format, level string }

func (l *logFlags) register(fs *flag.FlagSet, defaultLevel string) {
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&l.level, "log-level", defaultLevel, "log level: debug, info, warn or error")
}

// logger returns the slog logger the flags describe, writing to w.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format: %q is neither text nor json", l.format)
	}
}

// checkServiceURL enforces the command-line rule for URLs of authorization
// servers and resources: https, or plain http to a loopback host with
// --insecure-http (RS-24). Plain http to any other host is refused, flag or
// not: the libraries would refuse it too.
func checkServiceURL(flagName, raw string, insecureHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%s: %q is not an absolute URL", flagName, raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme != "http":
		return fmt.Errorf("%s: %q: only https (or http to loopback with --insecure-http) is allowed", flagName, raw)
	case !oauthmeta.IsLoopbackHost(u.Hostname()):
		return fmt.Errorf("%s: %s is plain http to a non-loopback host: use https (tokens would cross the network in clear text)", flagName, raw)
	case !insecureHTTP:
		return fmt.Errorf("%s: %s is plain http: pass --insecure-http to allow it on this machine (loopback hosts only)", flagName, raw)
	}
	return nil
}

// streamingServer returns an http.Server for MCP traffic: header reads are
// bounded, but there is no write timeout, since responses may be long event
// streams.
func streamingServer(h http.Handler, logger *slog.Logger) *http.Server {
	srv := revproxy.Server(h)
	srv.ErrorLog = log.New(slogWriter{logger}, "", 0)
	return srv
}

// slogWriter routes net/http's internal log lines to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}

// serveAll serves each server on its listener until ctx ends (SIGINT or
// SIGTERM), then shuts them all down, letting requests in flight finish for
// at most grace. It returns the first serving error.
func serveAll(ctx context.Context, logger *slog.Logger, grace time.Duration, servers []*http.Server, listeners []net.Listener) error {
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			if srv.TLSConfig != nil {
				errc <- srv.ServeTLS(listeners[i], "", "")
			} else {
				errc <- srv.Serve(listeners[i])
			}
		}()
	}
	var first error
	running := len(servers)
	select {
	case first = <-errc:
		running--
	case <-ctx.Done():
		logger.Info("shutting down", "grace", grace)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil && first == nil {
			first = fmt.Errorf("shutdown: %w", err)
		}
	}
	for ; running > 0; running-- {
		if err := <-errc; first == nil && !errors.Is(err, http.ErrServerClosed) {
			first = err
		}
	}
	if errors.Is(first, http.ErrServerClosed) {
		first = nil
	}
	return first
}

// listen opens a TCP listener, saying which flag was at fault on failure.
func listen(flagName, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return ln, nil
}

// secretValue resolves a secret given on the command line: "env:NAME" reads
// the environment variable NAME and "file:PATH" the file PATH (without its
// final line break), so the secret stays out of the process list and the
// configuration file; anything else is the secret itself.
func secretValue(flagName, v string, getenv func(string) string) (string, error) {
	if path, ok := strings.CutPrefix(v, "file:"); ok {
		s, err := parseFile(flagName, path, func(data []byte) (string, error) {
			return strings.TrimRight(string(data), "\r\n"), nil
		})
		if err == nil && s == "" {
			err = fmt.Errorf("%s: file %s is empty", flagName, path)
		}
		return s, err
	}
	name, ok := strings.CutPrefix(v, "env:")
	if !ok {
		return v, nil
	}
	s := getenv(name)
	if s == "" {
		return "", fmt.Errorf("%s: environment variable %s is empty", flagName, name)
	}
	return s, nil
}

// envSecret is secretValue for a secret that must be given by reference
// (env:VAR or file:PATH), so that it never shows in the process list.
func envSecret(flagName, v string, getenv func(string) string) (string, error) {
	if !isSecretRef(v) {
		return "", fmt.Errorf("%s: give it as env:VAR or file:PATH, so it does not show in the process list", flagName)
	}
	return secretValue(flagName, v, getenv)
}

// cutPair splits a flag value of the form NAME=VALUE, form naming both
// (ID=RESOURCE); neither may be empty.
func cutPair(flagName, spec, form string) (string, string, error) {
	k, v, ok := strings.Cut(spec, "=")
	if !ok || k == "" || v == "" {
		return "", "", fmt.Errorf("%s %q is not %s", flagName, spec, form)
	}
	return k, v, nil
}

// maxFlagFile bounds a file a flag names (a policy, a key): a device or a
// wrong file is refused rather than read whole.
const maxFlagFile = 4 << 20

// parseFile reads the file a flag names (at most maxFlagFile bytes) and
// parses it, saying which flag (and file) was at fault.
func parseFile[T any](flagName, path string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", flagName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFlagFile+1))
	if err != nil {
		return zero, fmt.Errorf("%s: %w", flagName, err)
	}
	if len(data) > maxFlagFile {
		return zero, fmt.Errorf("%s %s: larger than %d bytes", flagName, path, maxFlagFile)
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s %s: %w", flagName, path, err)
	}
	return v, nil
}

// fields splits a scope list given with spaces or commas.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}
