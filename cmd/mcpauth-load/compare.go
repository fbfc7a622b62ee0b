package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// comparePolicy is the per-tool policy of the protect+policy candidates:
// every request needs mcp:tools, and naming a tool makes the middleware
// read and scan the JSON-RPC body and check Mcp-Method/Mcp-Name.
const comparePolicy = `{"default": ["mcp:tools"], "tools": {"whoami": ["mcp:tools"], "reset": ["mcp:admin"]}}`

// verifySamples is how many ES256 verifications of each kind measure their
// CPU cost.
const verifySamples = 2000

// candidate is one proxy process of the comparison.
type candidate struct {
	name  string
	bin   string
	args  []string
	child *loadgen.Protect
	url   string
	peak  uint64
	cpu   time.Duration // used during the last run
	// self: the load process's own CPU time during the last run (the
	// generator, the issuer and the upstream MCP server), which the
	// candidate's requests and answers cost it too.
	self time.Duration
	// sysr, sysw: the candidate's read and write system calls during the
	// last run.
	sysr, sysw uint64
	// dpop: the candidate requires DPoP (protect --dpop required); its
	// requests carry DPoP-bound tokens with a fresh proof each.
	dpop bool
	rate float64 // the highest throughput seen, to size the pre-signed proofs
}

// workload is one kind of token stream: the same token on every request
// (verified-token cache hits) or a token never sent before on each.
type workload struct {
	name  string
	fresh bool
}

// compareResult holds the throughput of every (round, workload, candidate).
type compareResult struct {
	names     []string
	workloads []workload
	tput      map[string][]float64 // workload/candidate -> per-round req/s
	cpu       map[string]time.Duration
	self      map[string]time.Duration // the load process's CPU time, per workload/candidate
	sysr      map[string]uint64        // the candidate's read system calls
	sysw      map[string]uint64        // the candidate's write system calls
	requests  map[string]int64
	verify    verifyCost // one ES256 verification in the load process
}

// runCompare measures the proxies side by side. The load process serves
// the issuer (RFC 8414 metadata, JWK Set, token minting) and one go-sdk
// upstream; each candidate is a process of its own in front of that
// upstream: a bare httputil.ReverseProxy with protect's transport and
// buffer pool (internal/revproxy), the go-sdk RequireBearerToken +
// go-jose proxy on that same proxy, the same proxy behind go-jose's
// signature check alone (jose: the floor of any go-jose verifier), mcpauth
// protect (with --require, with
// a per-tool policy, and with --dpop required), oauth2-proxy in JWT bearer
// mode when it is built, and, with -protect-before, the first two built
// from another git revision. Every round runs every workload on every candidate for -round,
// in an order that rotates from round to round, so a burst of outside load
// hits one round rather than one candidate; the figures are medians over
// rounds of per-round throughput ratios.
func runCompare(ctx context.Context, o options, stdout, stderr io.Writer) (code int) {
	tmp, err := os.MkdirTemp("", "mcpauth-compare-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return fail(stderr, err)
	}
	after, err := mcpauthBinary(ctx, o.protect, filepath.Join(tmp, "after"), "")
	if err != nil {
		return fail(stderr, err)
	}
	var before string
	if o.protectBefore != "" {
		if before, err = mcpauthBinary(ctx, "build", filepath.Join(tmp, "before"), o.protectBefore); err != nil {
			return fail(stderr, err)
		}
	}
	policyFile := filepath.Join(tmp, "policy.json")
	if err := os.WriteFile(policyFile, []byte(comparePolicy), 0o600); err != nil {
		return fail(stderr, err)
	}
	// One resource identifier for every candidate, so that one token is
	// valid at all of them.
	resAddr, err := loadgen.FreeLoopbackAddr()
	if err != nil {
		return fail(stderr, err)
	}
	resourceURL := "http://" + resAddr + "/mcp"
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1, Audience: resourceURL})
	if err != nil {
		return fail(stderr, err)
	}
	defer f.Close()
	up := loadgen.NewUpstream()
	defer up.Close()

	// Every candidate's command line, given its listen address.
	peerArgs := func(kind string) func(addr string) []string {
		return func(addr string) []string {
			return []string{peerCommand, kind, "--addr", addr, "--upstream", up.URL, "--issuer", f.Issuer, "--resource", resourceURL}
		}
	}
	protectArgs := func(extra ...string) func(addr string) []string {
		return func(addr string) []string {
			return append([]string{"protect", "--addr", addr, "--upstream", up.URL, "--issuer", f.Issuer, "--resource", resourceURL,
				"--insecure-http", "--log-level", "info", "--require", "mcp:tools"}, extra...)
		}
	}
	// -protect-flags, and with -profile a pprof listener, for the two
	// candidates built from the working tree.
	var pprofAddrs [2]string
	afterFlags := func(i int, extra ...string) []string {
		extra = append(extra, strings.Fields(o.protectFlags)...)
		if o.profileDir != "" {
			extra = append(extra, "--pprof-addr", pprofAddrs[i])
		}
		return extra
	}
	if o.profileDir != "" {
		for i := range pprofAddrs {
			if pprofAddrs[i], err = loadgen.FreeLoopbackAddr(); err != nil {
				return fail(stderr, err)
			}
		}
	}
	type spec struct {
		name, bin string
		args      func(addr string) []string
		dpop      bool
	}
	specs := []spec{
		{"bare", self, peerArgs("bare"), false},
		{"sdk", self, peerArgs("sdk"), false},
		{josePeer, self, peerArgs(josePeer), false},
		{"protect", after, protectArgs(afterFlags(0)...), false},
		{"protect+policy", after, protectArgs(afterFlags(1, "--policy", policyFile)...), false},
		{"protect+dpop", after, protectArgs(append([]string{"--dpop", "required"}, strings.Fields(o.protectFlags)...)...), true},
	}
	if before != "" {
		specs = append(specs, spec{"before", before, protectArgs(), false}, spec{"before+policy", before, protectArgs("--policy", policyFile), false})
	}
	if o2p, err := oauth2ProxyBinary(o.oauth2Proxy, stdout); err != nil {
		return fail(stderr, err)
	} else if o2p != "" {
		secret := newCookieSecret()
		specs = append(specs, spec{oauth2ProxyName, o2p, func(addr string) []string {
			return oauth2ProxyArgs(addr, up.URL, f.Issuer, resourceURL, secret)
		}, false})
	}
	var cands []*candidate
	for _, sp := range specs {
		addr := resAddr // the address the tokens' audience names
		if sp.name != "protect" {
			if addr, err = loadgen.FreeLoopbackAddr(); err != nil {
				return fail(stderr, err)
			}
		}
		cands = append(cands, &candidate{name: sp.name, bin: sp.bin, args: sp.args(addr), url: "http://" + addr + "/mcp", dpop: sp.dpop})
	}
	defer func() {
		for _, c := range cands {
			if c.child == nil {
				continue
			}
			if err := c.child.Stop(stopGrace); err != nil {
				fmt.Fprintf(stderr, "mcpauth-load: %s did not exit cleanly: %v\n%s\n", c.name, err, c.child.Tail())
				code = 1
			}
		}
	}()
	for _, c := range cands {
		if c.child, err = loadgen.StartCommand(ctx, loadgen.CommandConfig{Binary: c.bin, Args: c.args, ReadyURL: oauth2ProxyReadyURL(c)}); err != nil {
			return fail(stderr, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	for _, p := range []struct {
		name  string
		kinds []string
	}{{oauth2ProxyName, oauth2ProxyProbeKinds}, {josePeer, joseProbeKinds}} {
		if err := probeRefusals(ctx, f.Client(1), f, cands, p.name, p.kinds, stdout); err != nil {
			return fail(stderr, err)
		}
	}
	fmt.Fprintf(stdout, "compare: %d rounds of %v per candidate and workload, concurrency %d, candidates %s\n",
		o.rounds, o.round, o.conc, strings.Join(names(cands), ", "))
	if o.protectBefore != "" {
		fmt.Fprintf(stdout, "before = mcpauth protect built from %s\n", o.protectBefore)
	}
	// The price of one ES256 verification on this machine, before the
	// rounds: the fresh-token budget adds it to the bare proxy's CPU.
	verify, verr := measureVerifyCost(ctx, f, resourceURL, verifySamples)
	if verr != nil {
		fmt.Fprintf(stdout, "ES256 verification cost not measured: %v\n", verr)
		verify = verifyCost{}
	}
	load0 := loadAverage()
	res, err := compareRounds(ctx, o, f, resourceURL, cands, stdout)
	if err != nil {
		return fail(stderr, err)
	}
	res.verify = verify
	fmt.Fprintf(stdout, "load average: %s at the start, %s at the end\n", load0, loadAverage())
	for _, c := range cands {
		c.peak, _ = c.child.PeakRSS()
	}
	res.write(stdout, cands, o.protectBefore != "")
	if o.profileDir != "" {
		if err := profileProtect(ctx, o, f, cands, pprofAddrs, stdout); err != nil {
			return fail(stderr, err)
		}
	}
	return res.check(o, cands, stderr)
}

func names(cands []*candidate) []string {
	var n []string
	for _, c := range cands {
		n = append(n, c.name)
	}
	return n
}

// mcpauthBinary returns the mcpauth executable -protect names: a path, or
// "build" ("race": with -race) to build ./cmd/mcpauth into dir; with ref it
// builds that git revision, exported with git archive into dir (the
// working tree is left alone).
func mcpauthBinary(ctx context.Context, spec, dir, ref string) (string, error) {
	if spec != "build" && spec != "race" {
		return spec, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if ref == "" {
		return loadgen.BuildMcpauth(ctx, dir, spec == "race")
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", ref)
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	extract.Stdin = pipe
	var archErr strings.Builder
	archive.Stderr = &archErr
	if err := extract.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		_ = extract.Wait()
		return "", fmt.Errorf("git archive %s: %v: %s", ref, err, archErr.String())
	}
	if err := extract.Wait(); err != nil {
		return "", fmt.Errorf("extracting %s: %w", ref, err)
	}
	return loadgen.BuildMcpauthIn(ctx, src, dir, spec == "race")
}

// tokenSource gives the Next function of a workload.
type tokenSource struct {
	f        *loadgen.Fixture
	repeated string
	fresh    preminted // valid tokens never sent before

	// DPoP (RFC 9449): one client key; the repeated workload's token bound
	// to it; the requests of the next run, each with a proof signed for it
	// (a fresh bound token each for the fresh workload).
	prover    *dpop.Prover
	resource  string
	bound     string
	dpopFresh bool
	dpop      preminted
}

// preminted are requests minted before a run, so that the generator spends
// no signing time during it; past them, Next mints in the request loop.
type preminted struct {
	reqs []loadgen.Request
	next atomic.Int64
	mint func() (loadgen.Request, error)
}

// fill replaces the requests with n new ones, minted on two goroutines.
func (p *preminted) fill(n int) error {
	p.reqs = make([]loadgen.Request, n)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for g := range 2 {
		wg.Go(func() {
			for i := g; i < n; i += 2 {
				if p.reqs[i], errs[g] = p.mint(); errs[g] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nextFunc hands out the requests from the first.
func (p *preminted) nextFunc() func(w, i int) loadgen.Request {
	p.next.Store(0)
	return func(int, int) loadgen.Request {
		if n := int(p.next.Add(1)) - 1; n < len(p.reqs) {
			return p.reqs[n]
		}
		r, err := p.mint()
		if err != nil {
			return loadgen.Request{Kind: "mint-error", WantStatus: -1}
		}
		return r
	}
}

func newTokenSource(f *loadgen.Fixture, repeated string) *tokenSource {
	s := &tokenSource{f: f, repeated: repeated}
	s.fresh.mint = func() (loadgen.Request, error) {
		tok, err := f.FreshToken()
		return loadgen.Request{Kind: "fresh", Token: tok, WantStatus: http.StatusOK}, err
	}
	s.dpop.mint = s.dpopRequest
	return s
}

// dpopRequest is one DPoP request of the current workload: the bound
// token (repeated, or minted now) and a proof never sent before.
func (s *tokenSource) dpopRequest() (loadgen.Request, error) {
	kind, tok := "repeated-dpop", s.bound
	if s.dpopFresh {
		var err error
		kind = "fresh-dpop"
		if tok, err = s.f.BoundToken(s.prover.JKT()); err != nil {
			return loadgen.Request{}, err
		}
	}
	proof, err := s.prover.Proof(dpop.Request{Method: http.MethodPost, URL: s.resource, AccessToken: tok})
	if err != nil {
		return loadgen.Request{}, err
	}
	return loadgen.Request{Kind: kind, Token: tok, DPoP: proof, WantStatus: http.StatusOK}, nil
}

// nextFunc is the Next of the repeated or the fresh workload.
func (s *tokenSource) nextFunc(fresh bool) func(w, i int) loadgen.Request {
	if fresh {
		return s.fresh.nextFunc()
	}
	return func(int, int) loadgen.Request {
		return loadgen.Request{Kind: "repeated", Token: s.repeated, WantStatus: http.StatusOK}
	}
}

func compareRounds(ctx context.Context, o options, f *loadgen.Fixture, resourceURL string, cands []*candidate, stdout io.Writer) (*compareResult, error) {
	repeated, err := f.FreshToken()
	if err != nil {
		return nil, err
	}
	prover, err := dpop.NewProver(dpop.ProverConfig{})
	if err != nil {
		return nil, err
	}
	bound, err := f.BoundToken(prover.JKT())
	if err != nil {
		return nil, err
	}
	src := newTokenSource(f, repeated)
	src.prover, src.resource, src.bound = prover, resourceURL, bound
	client := f.Client(o.conc * len(cands))
	defer client.CloseIdleConnections()
	one := func(c *candidate, fresh bool, d time.Duration) (*loadgen.Report, error) {
		next := src.nextFunc(fresh)
		if c.dpop {
			src.dpopFresh = fresh
			if err := src.dpop.fill(int(c.rate*d.Seconds()*1.5) + 100); err != nil {
				return nil, err
			}
			next = src.dpop.nextFunc()
		}
		cpu0, _ := c.child.CPUTime()
		self0, _ := loadgen.ProcessCPUTime(os.Getpid())
		r0, w0, _ := c.child.Syscalls()
		defer func() {
			r1, w1, _ := c.child.Syscalls()
			c.sysr, c.sysw = r1-r0, w1-w0
			c.cpu, _ = c.child.CPUTime()
			c.cpu -= cpu0
			c.self, _ = loadgen.ProcessCPUTime(os.Getpid())
			c.self -= self0
		}()
		rep, err := loadgen.Run(ctx, loadgen.Config{Target: c.url, Client: client, Next: next,
			Concurrency: o.conc, Duration: d})
		if err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rep.Wrong() != 0 || rep.TransportErrors != 0 {
			var b strings.Builder
			rep.WriteText(&b)
			return nil, fmt.Errorf("%s: %d wrong answers, %d transport errors:\n%s%s", c.name, rep.Wrong(), rep.TransportErrors, b.String(), c.child.Tail())
		}
		c.rate = max(c.rate, rep.Throughput)
		return rep, nil
	}
	// Warm-up: connections, key fetches and the repeated token's first
	// verification happen here, not in round 1.
	freshRate := 0.0
	if err := src.fresh.fill(2000); err != nil {
		return nil, err
	}
	for _, c := range cands {
		if _, err := one(c, false, o.round/2); err != nil {
			return nil, err
		}
		rep, err := one(c, true, o.round/2)
		if err != nil {
			return nil, err
		}
		freshRate = max(freshRate, rep.Throughput)
	}
	res := &compareResult{names: names(cands), workloads: []workload{{"repeated", false}, {"fresh", true}}, tput: map[string][]float64{},
		cpu: map[string]time.Duration{}, self: map[string]time.Duration{}, sysr: map[string]uint64{}, sysw: map[string]uint64{}, requests: map[string]int64{}}
	for r := range o.rounds {
		order := slices.Clone(cands)
		k := r % len(order)
		order = append(order[k:], order[:k]...)
		fmt.Fprintf(stdout, "round %2d:", r+1)
		for _, wl := range res.workloads {
			if wl.fresh {
				if err := src.fresh.fill(int(freshRate*o.round.Seconds()*1.5) + 100); err != nil {
					return nil, err
				}
			}
			for _, c := range order {
				rep, err := one(c, wl.fresh, o.round)
				if err != nil {
					return nil, err
				}
				if wl.fresh {
					freshRate = max(freshRate, rep.Throughput)
				}
				key := wl.name + "/" + c.name
				res.tput[key] = append(res.tput[key], rep.Throughput)
				res.cpu[key] += c.cpu
				res.self[key] += c.self
				res.sysr[key] += c.sysr
				res.sysw[key] += c.sysw
				res.requests[key] += rep.Requests
				fmt.Fprintf(stdout, " %s %s %.0f", wl.name, c.name, rep.Throughput)
			}
		}
		fmt.Fprintln(stdout)
	}
	return res, nil
}

// ratio returns the per-round ratios a/b of one workload.
func (r *compareResult) ratio(wl, a, b string) []float64 {
	x, y := r.tput[wl+"/"+a], r.tput[wl+"/"+b]
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] / y[i]
	}
	return out
}

func median(v []float64) float64 { return quantile(v, 0.5) }

// quantile is the q-quantile of v, interpolated between order statistics.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// loadAverage is the first line of /proc/loadavg, or "".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// target is one figure the comparison prints: the median of per-round
// throughput ratios of a to b in workload wl, checked against min when
// set; with maxCPU, also the ratio of their CPU time per request, checked
// against it.
type target struct {
	what       string
	wl, a, b   string
	min        float64
	maxCPU     float64
	beforeOnly bool
}

// Targets of the figures: protect against the tuned bare proxy with a
// repeated token, and against the go-sdk proxy with fresh tokens; with
// fresh tokens protect's CPU per request must also stay within the bare
// proxy's plus one ES256 verification plus freshBudgetSlack.
const (
	minRepeated      = 0.95
	maxCPURepeated   = 1.10
	minFresh         = 1.05
	minPolicy        = 0.88
	freshBudgetSlack = 15 * time.Microsecond
)

func (r *compareResult) targets(withBefore bool) []target {
	t := []target{
		{what: "repeated token: protect / bare", wl: "repeated", a: "protect", b: "bare", min: minRepeated, maxCPU: maxCPURepeated},
		{what: "fresh token: protect / sdk", wl: "fresh", a: "protect", b: "sdk", min: minFresh},
		{what: "repeated token, per-tool policy: protect+policy / bare", wl: "repeated", a: "protect+policy", b: "bare", min: minPolicy},
		{what: "fresh token: protect / bare", wl: "fresh", a: "protect", b: "bare"},
		{what: "repeated token, DPoP: protect+dpop / protect", wl: "repeated", a: "protect+dpop", b: "protect"},
		{what: "fresh token, DPoP: protect+dpop / protect", wl: "fresh", a: "protect+dpop", b: "protect"},
		{what: "repeated token, DPoP: protect+dpop / bare", wl: "repeated", a: "protect+dpop", b: "bare"},
		{what: "fresh token, DPoP: protect+dpop / sdk", wl: "fresh", a: "protect+dpop", b: "sdk"},
		{what: "repeated token: sdk / bare", wl: "repeated", a: "sdk", b: "bare"},
		{what: "fresh token: sdk / bare", wl: "fresh", a: "sdk", b: "bare"},
	}
	t = append(t, joseTargets(r.names)...)
	if withBefore {
		t = append(t,
			target{what: "repeated token: before / bare", wl: "repeated", a: "before", b: "bare", beforeOnly: true},
			target{what: "fresh token: before / sdk", wl: "fresh", a: "before", b: "sdk", beforeOnly: true},
			target{what: "repeated token, per-tool policy: before+policy / bare", wl: "repeated", a: "before+policy", b: "bare", beforeOnly: true},
			target{what: "repeated token: protect / before", wl: "repeated", a: "protect", b: "before", beforeOnly: true},
			target{what: "fresh token: protect / before", wl: "fresh", a: "protect", b: "before", beforeOnly: true},
			target{what: "repeated token, per-tool policy: protect+policy / before+policy", wl: "repeated", a: "protect+policy", b: "before+policy", beforeOnly: true},
		)
	}
	return append(t, oauth2ProxyTargets(r.names)...)
}

// joseTargets are the ratios of the signature-only peer, when it runs: with
// fresh tokens, what the least work of any go-jose verifier gains over the
// sdk peer bounds what protect, which does that work and more, can gain.
func joseTargets(names []string) []target {
	if !slices.Contains(names, josePeer) {
		return nil
	}
	return []target{
		{what: "fresh token: jose / sdk (the bound for any go-jose verifier)", wl: "fresh", a: josePeer, b: "sdk"},
		{what: "fresh token: protect / jose", wl: "fresh", a: "protect", b: josePeer},
		{what: "fresh token: jose / bare", wl: "fresh", a: josePeer, b: "bare"},
	}
}

// cpuPer is the CPU time per request of one workload/candidate over all
// rounds.
func (r *compareResult) cpuPer(key string) time.Duration {
	return r.cpu[key] / time.Duration(max(1, r.requests[key]))
}

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "MISS"
}

func (r *compareResult) write(w io.Writer, cands []*candidate, withBefore bool) {
	fmt.Fprintln(w, "\nthroughput, median over rounds (req/s):")
	for _, wl := range r.workloads {
		fmt.Fprintf(w, "  %-8s", wl.name)
		for _, n := range r.names {
			fmt.Fprintf(w, "  %s %.0f", n, median(r.tput[wl.name+"/"+n]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nprocess CPU time per request, all rounds (µs; /proc ticks of 10 ms):")
	for _, wl := range r.workloads {
		fmt.Fprintf(w, "  %-8s", wl.name)
		for _, n := range r.names {
			fmt.Fprintf(w, "  %s %.1f", n, float64(r.cpuPer(wl.name+"/"+n))/1e3)
		}
		fmt.Fprintln(w)
	}
	if len(r.sysw) > 0 {
		fmt.Fprintln(w, "\nsystem calls per request, read/write (/proc/PID/io):")
		for _, wl := range r.workloads {
			fmt.Fprintf(w, "  %-8s", wl.name)
			for _, n := range r.names {
				key := wl.name + "/" + n
				q := float64(max(1, r.requests[key]))
				fmt.Fprintf(w, "  %s %.2f/%.2f", n, float64(r.sysr[key])/q, float64(r.sysw[key])/q)
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.self) > 0 {
		// The same 2 cores run the generator and the upstream: what a
		// candidate's requests cost them is part of its throughput.
		fmt.Fprintln(w, "\nthe load process's CPU time per request (generator, issuer, upstream MCP server), by candidate (µs):")
		for _, wl := range r.workloads {
			fmt.Fprintf(w, "  %-8s", wl.name)
			for _, n := range r.names {
				key := wl.name + "/" + n
				fmt.Fprintf(w, "  %s %.1f", n, float64(r.self[key]/time.Duration(max(1, r.requests[key])))/1e3)
			}
			fmt.Fprintln(w)
		}
	}
	if r.verify.sig > 0 {
		fmt.Fprintf(w, "\nES256 verification in the load process (thread CPU time, median of batches): signature %.1f µs (SHA-256 + crypto/ecdsa P-256), whole token with go-jose %.1f µs\n",
			float64(r.verify.sig)/1e3, float64(r.verify.jose)/1e3)
	}
	fmt.Fprintln(w, "\nCPU time per request, ratios over all rounds (steadier than throughput on a loaded machine):")
	for _, t := range r.targets(withBefore) {
		if den := r.cpuPer(t.wl + "/" + t.b); den > 0 {
			line := fmt.Sprintf("  %-66s x%.3f", strings.Replace(t.what, ":", ": CPU", 1), float64(r.cpuPer(t.wl+"/"+t.a))/float64(den))
			if t.maxCPU > 0 {
				line += fmt.Sprintf("  target <= %.2f", t.maxCPU)
			}
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w, "\nmedian of per-round throughput ratios [interquartile range] (min–max):")
	for _, t := range r.targets(withBefore) {
		v := r.ratio(t.wl, t.a, t.b)
		line := fmt.Sprintf("  %-66s x%.3f [%.3f–%.3f] (%.2f–%.2f)", t.what, median(v), quantile(v, 0.25), quantile(v, 0.75), slices.Min(v), slices.Max(v))
		if t.min > 0 {
			line += fmt.Sprintf("  target >= %.2f", t.min)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "\ntargets:")
	for _, t := range r.targets(withBefore) {
		if t.min > 0 {
			m := median(r.ratio(t.wl, t.a, t.b))
			fmt.Fprintf(w, "  %-66s x%.3f >= %.2f  %s\n", t.what+", throughput", m, t.min, verdict(m >= t.min))
		}
		if t.maxCPU > 0 {
			c := float64(r.cpuPer(t.wl+"/"+t.a)) / float64(max(1, r.cpuPer(t.wl+"/"+t.b)))
			fmt.Fprintf(w, "  %-66s x%.3f <= %.2f  %s\n", t.what+", CPU per request", c, t.maxCPU, verdict(c <= t.maxCPU))
		}
	}
	if r.verify.sig > 0 {
		bare, got := r.cpuPer("fresh/bare"), r.cpuPer("fresh/protect")
		// The verification counted three ways: the signature alone and
		// the whole go-jose parse and check, both timed on one idle
		// thread, then as the sdk peer pays it in this run (its CPU per
		// fresh request over the bare proxy's, under the same load as
		// protect's).
		terms := []struct {
			what, name string
			cost       time.Duration
		}{
			{"fresh token: protect CPU per request within budget", "ES256", r.verify.sig},
			{"fresh token: the same, a whole go-jose verification", "go-jose", r.verify.jose},
		}
		for _, p := range []struct{ peer, what, name string }{
			{"sdk", "fresh token: the same, the verification as the sdk peer pays it", "sdk's verification"},
			{josePeer, "fresh token: the same, the check as the jose peer pays it", "jose's check"},
		} {
			if c := r.cpuPer("fresh/" + p.peer); c > bare {
				terms = append(terms, struct {
					what, name string
					cost       time.Duration
				}{p.what, p.name, c - bare})
			}
		}
		for _, t := range terms {
			if t.cost <= 0 {
				continue
			}
			budget := bare + t.cost + freshBudgetSlack
			fmt.Fprintf(w, "  %-66s %.1f µs <= %.1f µs (bare %.1f + %s %.1f + %.0f)  %s\n", t.what,
				float64(got)/1e3, float64(budget)/1e3, float64(bare)/1e3, t.name, float64(t.cost)/1e3, float64(freshBudgetSlack)/1e3, verdict(got <= budget))
		}
	} else {
		fmt.Fprintf(w, "  %-66s not checked: the ES256 verification cost was not measured\n", "fresh token: protect CPU per request within budget")
	}
	fmt.Fprintln(w, "\npeak RSS (VmHWM):")
	for _, c := range cands {
		fmt.Fprintf(w, "  %-15s %.1f MiB\n", c.name, float64(c.peak)/(1<<20))
	}
}

// check fails the run on a protect peak RSS over -max-rss-mib; ratios
// below their targets are reported, not failed (a loaded machine moves
// them).
func (r *compareResult) check(o options, cands []*candidate, stderr io.Writer) int {
	code := 0
	for _, c := range cands {
		if strings.HasPrefix(c.name, "protect") && o.maxRSS > 0 && c.peak > uint64(o.maxRSS)<<20 {
			fmt.Fprintf(stderr, "mcpauth-load: %s peak RSS %d MiB over the bound of %d MiB\n", c.name, c.peak>>20, o.maxRSS)
			code = 1
		}
	}
	return code
}

func registerCompare(fs *flag.FlagSet, o *options) {
	fs.BoolVar(&o.compare, "compare", false, "compare mcpauth protect (-protect, default: build) with a bare reverse proxy (protect's transport and buffer pool, nothing else), the go-sdk RequireBearerToken proxy and a signature-only go-jose check on the bare proxy (jose), in interleaved rounds")
	fs.DurationVar(&o.round, "round", 250*time.Millisecond, "-compare: length of one candidate's run per workload and round")
	fs.StringVar(&o.protectBefore, "protect-before", "", "-compare: also measure mcpauth protect built from this git revision (git archive, built in a temporary directory)")
	fs.StringVar(&o.protectFlags, "protect-flags", "", "-compare: more flags for the protect candidates built from the working tree (-protect), e.g. \"--access-log\"")
	fs.StringVar(&o.profileDir, "profile", "", "-compare: after the rounds, write CPU and allocation profiles of protect under each workload into this directory; -refresh: a CPU profile of the load process during each set-up's last round (cpu-refresh-SETUP.pprof)")
	fs.DurationVar(&o.profileTime, "profile-time", 10*time.Second, "-compare: length of each profile")
	registerOAuth2Proxy(fs, o)
}
