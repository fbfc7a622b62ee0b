package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// stopGrace is how long the child may take to exit after SIGTERM.
const stopGrace = 15 * time.Second

func runProtect(ctx context.Context, o options, stdout, stderr io.Writer) int {
	tmp, err := os.MkdirTemp("", "mcpauth-load-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(tmp)
	bin, err := mcpauthBinary(ctx, o.protect, tmp, "")
	if err != nil {
		return fail(stderr, err)
	}
	addr, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		return fail(stderr, err)
	}
	resourceURL := "http://" + addr + "/mcp"
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: o.pool, Audience: resourceURL})
	if err != nil {
		return fail(stderr, err)
	}
	defer f.Close()
	up := loadgen.NewUpstream()
	defer up.Close()
	child, err := loadgen.StartProtect(ctx, loadgen.ProtectConfig{Binary: bin, Addr: addr, Upstream: up.URL, Issuer: f.Issuer, Resource: resourceURL})
	if err != nil {
		return fail(stderr, err)
	}
	defer func() { _ = child.Stop(stopGrace) }()
	fmt.Fprintf(stdout, "mcpauth protect (%s): %s\n", o.protect, child.Ready)
	rep, err := loadgen.Run(ctx, loadgen.Config{Target: resourceURL, Client: f.Client(o.conc), Next: f.Next(loadgen.DefaultMix()),
		Concurrency: o.conc, Duration: o.dur})
	if err != nil {
		return fail(stderr, err)
	}
	peak, rssErr := child.PeakRSS()
	stopErr := child.Stop(stopGrace)
	rep.WriteText(stdout) // its memory line is the load process's
	fmt.Fprintf(stdout, "mcpauth protect: peak RSS (VmHWM) %.1f MiB (bound %d MiB), data races %d, JWK Set fetches %d, upstream served %d, leaked %d\n",
		float64(peak)/(1<<20), o.maxRSS, child.Races(), f.JWKSFetches(), up.Served.Load(), up.Leaked.Load())
	return checkProtect(o, rep, checks{peak: peak, rssErr: rssErr, stopErr: stopErr, races: child.Races(),
		served: up.Served.Load(), leaked: up.Leaked.Load(), tail: child.Tail()}, stderr)
}

type checks struct {
	peak                  uint64
	rssErr, stopErr       error
	races, served, leaked int64
	tail                  string
}

func checkProtect(o options, rep *loadgen.Report, c checks, stderr io.Writer) int {
	code := checkReport(rep, stderr)
	bad := func(format string, args ...any) { fmt.Fprintf(stderr, "mcpauth-load: "+format+"\n", args...); code = 1 }
	if c.rssErr != nil {
		bad("reading the child's peak RSS: %v", c.rssErr)
	} else if o.maxRSS > 0 && c.peak > uint64(o.maxRSS)<<20 {
		bad("child peak RSS %d MiB over the bound of %d MiB", c.peak>>20, o.maxRSS)
	}
	if c.races != 0 {
		bad("the child reported %d data races:\n%s", c.races, c.tail)
	}
	if c.stopErr != nil {
		bad("the child did not exit cleanly after SIGTERM: %v\n%s", c.stopErr, c.tail)
	}
	var valid int64
	for _, kind := range []string{"valid-cached", "valid-fresh"} {
		if k := rep.ByKind[kind]; k != nil {
			valid += k.Statuses[200]
		}
	}
	// Requests in flight when the run ends reach the upstream but are not
	// counted in the report: at most one per worker.
	if c.leaked != 0 || c.served < valid || c.served > valid+int64(o.conc) {
		bad("upstream served %d requests (want %d, the valid ones, plus at most %d in flight at the end), %d without identity or with a credential",
			c.served, valid, o.conc, c.leaked)
	}
	return code
}
