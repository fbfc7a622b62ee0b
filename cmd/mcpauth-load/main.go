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
// With -compare it measures mcpauth protect against a bare
// httputil.ReverseProxy with protect's own upstream transport and buffer
// pool (the floor: the same proxy with nothing in front) and the go-sdk's
// auth.RequireBearerToken with a go-jose verifier on that same proxy
// (mcpauth-load re-executed as `mcpauth-load peer bare|sdk`), each a
// process of its own in front of the same upstream, and protect --dpop
// required with DPoP-bound tokens and a fresh proof per request, with one
// repeated token and with a fresh token per request, in interleaved rounds
// whose order rotates. Before the rounds it measures one ES256
// verification's CPU time in the load process; after them it prints
// medians of per-round throughput ratios, CPU time per request and peak
// RSS of every proxy, and pass or miss for each target, the fresh-token
// budget (bare's CPU per request + one ES256 verification + 15 µs) among
// them. -protect-before REF adds protect built from another git revision,
// -oauth2-proxy PATH oauth2-proxy in JWT bearer mode (by default the one
// `make oauth2-proxy` builds, when it exists), and -profile DIR writes CPU
// and allocation profiles of protect under each workload (BENCHMARKS.md,
// "mcpauth protect against a bare reverse proxy").
//
// With -authservers it measures `mcpauth authserver` (memory store, its
// per-address and per-client rate limits raised by --rate-* flags) beside
// Ory Hydra v2.3.0 and panva oidc-provider (tools/interop/asload.mjs),
// each a process of its own, in interleaved rounds whose order rotates:
// client-credentials grants/s, refresh-token grants/s (each worker rotates
// its own chain) and complete authorization-code logins/s (authorization
// request, the server's login and consent pages posted as a browser would,
// code exchange with PKCE), every answer checked (200, a Bearer JWT from
// the issuer for the right subject and client, signatures of a sample
// against the server's JWK Set, a new refresh token on each rotation). It
// prints medians of per-round grants/s and ratios, latency, each server's
// CPU time per grant from /proc, and that CPU against one ES256 signature
// of the same claims with go-jose timed in this process. Two more servers
// can stand beside them: "floor" (this program re-executed as
// `mcpauth-load peer token-floor`, a plain net/http token endpoint that
// only parses the form, checks the client, signs and answers: what the
// token endpoint cannot go below on this stack; mcpauth's CPU per grant is
// printed against it) and "mcpauth-before" (mcpauth built from the git
// revision -mcpauth-before names, an interleaved A/B in one run)
// (BENCHMARKS.md, "`authserver/`: token endpoint").
//
//	go run ./cmd/mcpauth-load -c 64 -d 20s
//	go run -race ./cmd/mcpauth-load -c 32 -d 10s            # the race run
//	go run ./cmd/mcpauth-load -protect build -c 64 -d 20s   # builds ./cmd/mcpauth
//	go run ./cmd/mcpauth-load -protect race -c 32 -d 10s    # builds it with -race
//	go run ./cmd/mcpauth-load -protect ./mcpauth -c 64 -d 20s
//	go run ./cmd/mcpauth-load -refresh memory,bolt,postgres,postgres3 -database-url postgres://… -c 16 -d 5s
//	go run ./cmd/mcpauth-load -compare -protect-before main  # or: make load-compare COMPARE_BEFORE=main
//	go run ./cmd/mcpauth-load -authservers mcpauth,hydra,oidc-provider -c 8 -rounds 10 -round 2s  # or: make load-authservers
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == peerCommand {
		os.Exit(runPeer(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	conc, pool, maxRSS int
	dur                time.Duration
	remote             bool
	protect            string
	// -refresh: the authorization server's refresh grant on each storage.
	refresh, databaseURL, kek string
	minRatio                  float64
	// -compare
	compare                   bool
	round, profileTime        time.Duration
	protectBefore, profileDir string
	protectFlags              string
	oauth2Proxy               string
	// -compare and -refresh: interleaved rounds.
	rounds int
	// -authservers
	as asOptions
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
	fs.StringVar(&o.refresh, "refresh", "", "measure the authorization server's refresh-token grants on these set-ups instead, comma-separated, the first the reference: "+strings.Join(refreshModes, ", "))
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL for -refresh postgres and postgres3 (default $MCPAUTH_LOAD_DATABASE_URL)")
	fs.StringVar(&o.kek, "key-encryption-key", "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=", "with -refresh: the key sealing signing keys in PostgreSQL (base64 of 32 bytes)")
	fs.Float64Var(&o.minRatio, "min-ratio", 0, "with -refresh: fail if a set-up's grants/s is under this fraction of the first's")
	fs.IntVar(&o.rounds, "rounds", 0, "interleaved rounds: of -round per candidate with -compare (default 40), of -d per set-up with -refresh (default 3)")
	registerCompare(fs, &o)
	registerAuthservers(fs, &o.as)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.as.servers != "" {
		o.rounds = cmp.Or(o.rounds, 5)
		if !flagSet(fs, "round") {
			o.round = time.Second
		}
		return runAuthservers(ctx, o, stdout, stderr)
	}
	if o.refresh != "" {
		o.rounds = cmp.Or(o.rounds, 3)
		return runRefreshLoad(ctx, o, stdout, stderr)
	}
	if o.compare {
		o.rounds = cmp.Or(o.rounds, 40)
		if o.protect == "" {
			o.protect = "build"
		}
		return runCompare(ctx, o, stdout, stderr)
	}
	if o.protect != "" {
		return runProtect(ctx, o, stdout, stderr)
	}
	return runInProcess(ctx, o, stdout, stderr)
}

func runInProcess(ctx context.Context, o options, stdout, stderr io.Writer) int {
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{Remote: o.remote, CachedTokens: o.pool})
	if err != nil {
		return fail(stderr, err)
	}
	defer f.Close()
	rep, err := loadgen.Run(ctx, loadgen.Config{Target: f.URL, Client: f.Client(o.conc), Next: f.Next(loadgen.DefaultMix()),
		Concurrency: o.conc, Duration: o.dur})
	if err != nil {
		return fail(stderr, err)
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

// flagSet reports whether the flag called name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// fail reports err on stderr and returns exit status 1.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "mcpauth-load:", err)
	return 1
}

func checkReport(rep *loadgen.Report, stderr io.Writer) int {
	if rep.Wrong() != 0 || rep.TransportErrors != 0 {
		fmt.Fprintf(stderr, "mcpauth-load: %d requests answered wrongly, %d transport errors\n", rep.Wrong(), rep.TransportErrors)
		return 1
	}
	return 0
}
