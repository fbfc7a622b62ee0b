package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// perfFlags are protect's --access-log and --pprof-addr.
//
// Access log: by default the proxy logs refusals (WARN: every 401, 403 and
// 400 with its reason) but not each allowed request, because a log line
// is a synchronous write to stderr for every request, which costs a busy
// proxy a measurable share of its throughput (BENCHMARKS.md, "protect
// against a bare reverse proxy"); the Prometheus counters (--metrics-addr)
// count allowed requests without that cost. --access-log adds one INFO
// line per allowed request (decision, method, path, remote address, iss,
// sub, client_id; never a token).
type perfFlags struct {
	accessLog bool
	pprofAddr string
}

func (p *perfFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&p.accessLog, "access-log", false, "log every allowed request at INFO (default: only refusals are logged, at WARN)")
	fs.StringVar(&p.pprofAddr, "pprof-addr", "", "serve net/http/pprof profiles on this loopback address, for profiling (default: off)")
}

// decisionLogger is the logger the resource middleware records its
// decisions with: all of them with --access-log, otherwise only those at
// WARN and above (refusals).
func (p *perfFlags) decisionLogger(l *slog.Logger) *slog.Logger {
	if p.accessLog {
		return l
	}
	return slog.New(floorHandler{Handler: l.Handler(), floor: slog.LevelWarn})
}

// pprofServer returns the profiling server for --pprof-addr, or nils. The
// address must be on loopback: profiles show request paths and timings.
func (p *perfFlags) pprofServer(logger *slog.Logger) (*http.Server, net.Listener, error) {
	if p.pprofAddr == "" {
		return nil, nil, nil
	}
	host, _, err := net.SplitHostPort(p.pprofAddr)
	if err != nil || !oauthmeta.IsLoopbackHost(host) {
		return nil, nil, fmt.Errorf("--pprof-addr: %q is not a loopback host:port", p.pprofAddr)
	}
	ln, err := listen("--pprof-addr", p.pprofAddr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return streamingServer(mux, logger), ln, nil
}

// floorHandler drops records below floor.
type floorHandler struct {
	slog.Handler
	floor slog.Level
}

func (h floorHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.floor && h.Handler.Enabled(ctx, l)
}

func (h floorHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return floorHandler{Handler: h.Handler.WithAttrs(attrs), floor: h.floor}
}

func (h floorHandler) WithGroup(name string) slog.Handler {
	return floorHandler{Handler: h.Handler.WithGroup(name), floor: h.floor}
}
