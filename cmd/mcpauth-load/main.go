// Command mcpauth-load measures mcpauth's resource middleware under load: it
// starts an in-process go-sdk MCP server behind the middleware on 127.0.0.1
// (package loadgen's Fixture), drives it with a mix of valid, invalid and
// missing tokens at the given concurrency for the given time, prints
// throughput, latency percentiles, outcomes by kind and memory, and exits
// non-zero if any request was wrongly allowed or refused or the process
// exceeded its memory bound.
//
//	go run ./cmd/mcpauth-load -c 64 -d 20s
//	go run -race ./cmd/mcpauth-load -c 32 -d 10s   # the race run
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpauth-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conc := fs.Int("c", loadgen.DefaultConcurrency, "concurrent workers")
	dur := fs.Duration("d", 10*time.Second, "duration of the run")
	remote := fs.Bool("remote", true, "fetch keys over HTTP (RemoteKeys) instead of static keys")
	pool := fs.Int("pool", 256, "number of distinct valid tokens that repeat (verified-token cache hits)")
	maxRSS := fs.Int("max-rss-mib", 256, "fail if the resident set exceeds this many MiB (0: no bound)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{Remote: *remote, CachedTokens: *pool})
	if err != nil {
		fmt.Fprintln(stderr, "mcpauth-load:", err)
		return 1
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := loadgen.Run(ctx, loadgen.Config{Target: f.URL, Client: f.Client(*conc), Next: f.Next(loadgen.DefaultMix()),
		Concurrency: *conc, Duration: *dur})
	if err != nil {
		fmt.Fprintln(stderr, "mcpauth-load:", err)
		return 1
	}
	fmt.Fprintf(stdout, "target %s (keys: %s), JWK Set fetches %d\n", f.URL, map[bool]string{true: "remote", false: "static"}[*remote], f.JWKSFetches())
	rep.WriteText(stdout)
	code := 0
	if rep.Wrong() != 0 || rep.TransportErrors != 0 {
		fmt.Fprintf(stderr, "mcpauth-load: %d requests answered wrongly, %d transport errors\n", rep.Wrong(), rep.TransportErrors)
		code = 1
	}
	if *maxRSS > 0 && rep.Memory.PeakRSS > uint64(*maxRSS)<<20 {
		fmt.Fprintf(stderr, "mcpauth-load: RSS peak %d MiB over the bound of %d MiB\n", rep.Memory.PeakRSS>>20, *maxRSS)
		code = 1
	}
	return code
}
