// Command mcpauth-load measures mcpauth under load with a mix of valid,
// invalid and missing tokens at the given concurrency for the given time,
// prints throughput, latency percentiles, outcomes by kind and memory, and
// exits non-zero if any request was wrongly allowed or refused, a memory
// bound was exceeded, or (with -protect) the proxy reported a data race.
//
// By default it drives the resource middleware in process: package
// loadgen's Fixture, a go-sdk MCP server behind the middleware on 127.0.0.1.
//
// With -protect it drives the `mcpauth protect` reverse proxy as a child
// process: the load process serves the issuer's RFC 8414 metadata and JWK
// Set and a go-sdk upstream MCP server on 127.0.0.1, starts `mcpauth
// protect --addr 127.0.0.1:PORT --upstream ... --issuer ... --resource
// http://127.0.0.1:PORT/mcp --insecure-http --log-level warn`, waits for its
// "listening on" line, runs the load, reads the child's peak RSS (VmHWM)
// and checks it against -max-rss-mib, sends SIGTERM and waits for a clean
// exit. The child is stopped on every path, ctrl-C included.
//
//	go run ./cmd/mcpauth-load -c 64 -d 20s
//	go run -race ./cmd/mcpauth-load -c 32 -d 10s            # the race run
//	go run ./cmd/mcpauth-load -protect build -c 64 -d 20s   # builds ./cmd/mcpauth
//	go run ./cmd/mcpauth-load -protect race -c 32 -d 10s    # builds it with -race
//	go run ./cmd/mcpauth-load -protect ./mcpauth -c 64 -d 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	conc, pool, maxRSS int
	dur                time.Duration
	remote             bool
	protect            string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpauth-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.conc, "c", loadgen.DefaultConcurrency, "concurrent workers")
	fs.DurationVar(&o.dur, "d", 10*time.Second, "duration of the run")
	fs.BoolVar(&o.remote, "remote", true, "in process: fetch keys over HTTP (RemoteKeys) instead of static keys")
	fs.IntVar(&o.pool, "pool", 256, "number of distinct valid tokens that repeat (verified-token cache hits)")
	fs.IntVar(&o.maxRSS, "max-rss-mib", 256, "fail if the peak resident set (of the child with -protect) exceeds this many MiB (0: no bound)")
	fs.StringVar(&o.protect, "protect", "", "drive `mcpauth protect` as a child process: the binary's path, or \"build\" / \"race\" to build ./cmd/mcpauth (with -race)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.protect != "" {
		return runProtect(ctx, o, stdout, stderr)
	}
	return runInProcess(ctx, o, stdout, stderr)
}

func runInProcess(ctx context.Context, o options, stdout, stderr io.Writer) int {
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{Remote: o.remote, CachedTokens: o.pool})
	if err != nil {
		fmt.Fprintln(stderr, "mcpauth-load:", err)
		return 1
	}
	defer f.Close()
	rep, err := loadgen.Run(ctx, loadgen.Config{Target: f.URL, Client: f.Client(o.conc), Next: f.Next(loadgen.DefaultMix()),
		Concurrency: o.conc, Duration: o.dur})
	if err != nil {
		fmt.Fprintln(stderr, "mcpauth-load:", err)
		return 1
	}
	fmt.Fprintf(stdout, "target %s (keys: %s), JWK Set fetches %d\n", f.URL, map[bool]string{true: "remote", false: "static"}[o.remote], f.JWKSFetches())
	rep.WriteText(stdout)
	code := checkReport(rep, stderr)
	if o.maxRSS > 0 && rep.Memory.PeakRSS > uint64(o.maxRSS)<<20 {
		fmt.Fprintf(stderr, "mcpauth-load: RSS peak %d MiB over the bound of %d MiB\n", rep.Memory.PeakRSS>>20, o.maxRSS)
		code = 1
	}
	return code
}

func checkReport(rep *loadgen.Report, stderr io.Writer) int {
	if rep.Wrong() != 0 || rep.TransportErrors != 0 {
		fmt.Fprintf(stderr, "mcpauth-load: %d requests answered wrongly, %d transport errors\n", rep.Wrong(), rep.TransportErrors)
		return 1
	}
	return 0
}
