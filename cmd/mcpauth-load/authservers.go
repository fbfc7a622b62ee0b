package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// asOptions are the flags of -authservers.
type asOptions struct {
	servers, grants  string
	mcpauth, hydra   string
	node, interopDir string
	hydraIterations  int
	hydraAlg         string
	hydraDSN         string
	verifyEvery      int
	pprofAddr        string
	sigSamples       int
	mcpauthEnv       listFlag
	mcpauthBefore    string
}

// grantKinds are the workloads -grants can name, in report order.
var grantKinds = []string{"client_credentials", "refresh_token", "authorization_code"}

func registerAuthservers(fs *flag.FlagSet, o *asOptions) {
	fs.StringVar(&o.servers, "authservers", "", "measure authorization servers, each a process of its own, comma-separated, mcpauth first (the reference): "+strings.Join(authServerNames, ", ")+"; in -rounds (default 5) of -round (default 1s) per server and workload")
	fs.StringVar(&o.grants, "grants", strings.Join(grantKinds, ","), "-authservers: the workloads, comma-separated: "+strings.Join(grantKinds, ", ")+" (a complete login: authorize, login and consent, code exchange with PKCE)")
	fs.StringVar(&o.mcpauth, "mcpauth", "build", "-authservers: the mcpauth binary, or \"build\" to build ./cmd/mcpauth")
	fs.StringVar(&o.hydra, "hydra", "", "-authservers: the Ory Hydra v2.3.0 binary (default tools/hydra/bin/hydra of this module, built by make hydra)")
	fs.StringVar(&o.node, "node", "node", "-authservers: the Node.js executable for oidc-provider")
	fs.StringVar(&o.interopDir, "interop-dir", "", "-authservers: the directory of asload.mjs and its node_modules (default tools/interop of this module)")
	fs.IntVar(&o.hydraIterations, "hydra-pbkdf2-iterations", 0, "-authservers: Hydra's PBKDF2 iterations for client secrets (0: Hydra's default, 25000)")
	fs.StringVar(&o.hydraAlg, "hydra-alg", "ES256", "-authservers: the algorithm of Hydra's access-token key: ES256 (like mcpauth's) or RS256 (Hydra's default, RSA 4096)")
	fs.StringVar(&o.hydraDSN, "hydra-dsn", hydraMemoryDSN, "-authservers: Hydra's database: \"memory\" (Hydra's own in-memory SQLite with a pool of connections, which answers 500 to some concurrent writes) or a PostgreSQL URL (migrated first with hydra migrate sql up; max_conns and max_idle_conns default to 4 per worker)")
	fs.IntVar(&o.verifyEvery, "verify-every", 8, "-authservers: check the signature of every Nth access token of each worker against the server's JWK Set (the first always; the claims of every token are checked)")
	fs.StringVar(&o.pprofAddr, "mcpauth-pprof-addr", "", "-authservers: start mcpauth authserver with --pprof-addr on this loopback address")
	fs.Var(&o.mcpauthEnv, "mcpauth-env", "-authservers: a KEY=VALUE environment variable for mcpauth authserver, e.g. GOGC=400 (repeatable)")
	fs.StringVar(&o.mcpauthBefore, "mcpauth-before", "", "-authservers: a git revision (e.g. main) built as the server \"mcpauth-before\", for an interleaved A/B of mcpauth authserver in one run (name it in -authservers)")
	fs.IntVar(&o.sigSamples, "sig-samples", 300, "-authservers: ES256 signatures timed per round for the reference cost")
}

// hydraMemoryDSN is Hydra's own in-memory SQLite database. Under
// concurrent writes it answers some grants and logins with 500 ("Unable to
// serialize access due to a concurrent update"), counted as Hydra's wrong
// answers; with one connection (max_conns=1 in the DSN) Hydra deadlocks.
const hydraMemoryDSN = "memory"

// asRun is one timed run of one workload on one server.
type asRun struct {
	grants, wrong int64
	elapsed, cpu  time.Duration
	latencies     []time.Duration
	errs          []string
}

// asResults collects the runs by workload and server.
type asResults struct {
	runs map[string][]asRun // "grant/server"
}

func (r *asResults) key(grant, server string) string { return grant + "/" + server }

// runAuthservers measures the authorization servers side by side in
// interleaved rounds: every round runs every workload on every server
// for -round, the servers in an order that rotates from round to round.
func runAuthservers(ctx context.Context, o options, stdout, stderr io.Writer) (code int) {
	names := splitList(o.as.servers)
	grants := splitList(o.as.grants)
	for _, g := range grants {
		if !slices.Contains(grantKinds, g) {
			return fail(stderr, fmt.Errorf("-grants: unknown workload %q (known: %s)", g, strings.Join(grantKinds, ", ")))
		}
	}
	if len(names) == 0 || names[0] != "mcpauth" {
		return fail(stderr, errors.New("-authservers: the first server must be mcpauth, the reference"))
	}
	tmp, err := os.MkdirTemp("", "mcpauth-authservers-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(tmp)
	root := moduleRoot()
	setup := asSetup{hydra: o.as.hydra, node: o.as.node, interopDir: o.as.interopDir, hydraIterations: o.as.hydraIterations,
		hydraAlg: o.as.hydraAlg, hydraDSN: o.as.hydraDSN, mcpauthEnv: o.as.mcpauthEnv, pprofAddr: o.as.pprofAddr, conc: o.conc}
	if setup.hydra == "" {
		setup.hydra = filepath.Join(root, "tools", "hydra", "bin", "hydra")
	}
	if setup.interopDir == "" {
		setup.interopDir = filepath.Join(root, "tools", "interop")
	}
	if setup.hydraAlg != "ES256" && setup.hydraAlg != "RS256" {
		return fail(stderr, fmt.Errorf("-hydra-alg %q: ES256 or RS256", setup.hydraAlg))
	}
	if setup.mcpauth, err = mcpauthBinary(ctx, o.as.mcpauth, filepath.Join(tmp, "mcpauth"), ""); err != nil {
		return fail(stderr, err)
	}
	if o.as.mcpauthBefore != "" {
		if setup.mcpauthBefore, err = mcpauthBinary(ctx, "build", filepath.Join(tmp, "before"), o.as.mcpauthBefore); err != nil {
			return fail(stderr, err)
		}
	}
	load0 := loadAverage()
	fmt.Fprintf(stdout, "authorization servers: %d rounds of %v per server and workload, %d workers, servers %s; load average at the start %s\n",
		o.rounds, o.round, o.conc, strings.Join(names, ", "), load0)
	var servers []*authServer
	defer func() {
		for _, a := range servers {
			if err := a.stop(); err != nil {
				fmt.Fprintf(stderr, "mcpauth-load: %s did not exit cleanly: %v\n%s\n", a.name, err, a.child.Tail())
				code = 1
			}
			a.Close()
		}
	}()
	for _, n := range names {
		a, err := startAuthServer(ctx, n, setup, tmp)
		if err != nil {
			return fail(stderr, err)
		}
		servers = append(servers, a)
		fmt.Fprintf(stdout, "  %-14s %s (client secrets: %s)\n", a.name, a.issuer, a.ccAuthHasher)
		if a.name == "mcpauth" && len(setup.mcpauthEnv) > 0 {
			fmt.Fprintf(stdout, "  %-14s environment %s\n", "", strings.Join(setup.mcpauthEnv, " "))
		}
	}
	// Each worker's refresh-token chain starts with one login, and every
	// workload runs once unmeasured: connections, keys and caches warm up.
	for _, a := range servers {
		if slices.Contains(grants, "refresh_token") {
			a.refreshTokens = make([]string, o.conc)
			for i := range a.refreshTokens {
				_, err := a.relogin(ctx, i)
				if err != nil {
					return fail(stderr, fmt.Errorf("%s: the first login: %w\n%s", a.name, err, a.child.Tail()))
				}
			}
		}
		for _, g := range grants {
			r := a.run(ctx, g, o.conc, o.round/4, o.as.verifyEvery)
			if r.wrong != 0 && a.name == "mcpauth" {
				return fail(stderr, fmt.Errorf("%s %s warm-up: %d wrong answers: %s\n%s", a.name, g, r.wrong, strings.Join(r.errs, "\n"), a.child.Tail()))
			}
			if r.wrong != 0 {
				fmt.Fprintf(stdout, "  %s %s warm-up: %d wrong answers, the first: %s\n", a.name, g, r.wrong, r.errs[0])
			}
		}
	}
	sig, err := newSigCost(ctx, servers[0])
	if err != nil {
		return fail(stderr, err)
	}
	res := &asResults{runs: map[string][]asRun{}}
	for round := range o.rounds {
		if ctx.Err() != nil {
			return fail(stderr, ctx.Err())
		}
		order := slices.Clone(servers)
		k := round % len(order)
		order = append(order[k:], order[:k]...)
		fmt.Fprintf(stdout, "round %2d:", round+1)
		for _, g := range grants {
			for _, a := range order {
				r := a.run(ctx, g, o.conc, o.round, o.as.verifyEvery)
				res.runs[res.key(g, a.name)] = append(res.runs[res.key(g, a.name)], r)
				fmt.Fprintf(stdout, " %s %s %.0f", g, a.name, float64(r.grants)/r.elapsed.Seconds())
				if r.wrong != 0 {
					fmt.Fprintf(stdout, " (%d WRONG)", r.wrong)
				}
			}
		}
		fmt.Fprintln(stdout)
		if err := sig.measure(o.as.sigSamples); err != nil {
			return fail(stderr, err)
		}
	}
	fmt.Fprintf(stdout, "load average: %s at the start, %s at the end\n", load0, loadAverage())
	return res.write(stdout, stderr, servers, grants, sig)
}

// run runs workload g on a for d with conc workers. A request in flight
// when d ends is completed (a rotation the client never heard of would
// make its next use look like reuse). The server's CPU time is read from
// /proc before and after.
func (a *authServer) run(ctx context.Context, g string, conc int, d time.Duration, verifyEvery int) asRun {
	// Connections a server closed as idle between runs are not reused: a
	// POST on one fails and is not retried.
	a.transport.CloseIdleConnections()
	hc := &http.Client{Transport: a.transport, Timeout: 30 * time.Second}
	var r asRun
	var mu sync.Mutex
	var wg sync.WaitGroup
	cpu0, _ := a.child.CPUTime()
	start := time.Now()
	deadline := start.Add(d)
	for w := range conc {
		wg.Go(func() {
			var lat []time.Duration
			var errs []string
			defer func() {
				mu.Lock()
				r.latencies = append(r.latencies, lat...)
				r.errs = append(r.errs, errs...)
				mu.Unlock()
			}()
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				verify := verifyEvery > 0 && i%verifyEvery == 0
				t0 := time.Now()
				var err error
				switch g {
				case "client_credentials":
					err = a.clientCredentials(ctx, hc, verify)
				case "refresh_token":
					err = a.refresh(ctx, hc, w, verify)
				case "authorization_code":
					_, err = a.login(ctx, verify)
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					atomic.AddInt64(&r.wrong, 1)
					if len(errs) < 3 {
						errs = append(errs, err.Error())
					}
					if g == "refresh_token" {
						// The chain may be broken (a rotation that
						// happened but was not answered, a family
						// revoked): a new login starts another, its time
						// counted, itself not a grant.
						if _, err := a.relogin(ctx, w); err != nil {
							return
						}
					}
					continue
				}
				atomic.AddInt64(&r.grants, 1)
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	cpu1, _ := a.child.CPUTime()
	r.cpu = cpu1 - cpu0
	return r
}

// relogin starts worker i's refresh-token chain with a login.
func (a *authServer) relogin(ctx context.Context, i int) (*asAnswer, error) {
	ans, err := a.login(ctx, true)
	if err != nil {
		return nil, err
	}
	if ans.RefreshToken == "" {
		return nil, errors.New("the login gave no refresh token")
	}
	a.refreshTokens[i] = ans.RefreshToken
	return ans, nil
}

// write prints the table of each workload and the signature reference,
// and returns 1 if any answer was wrong.
func (res *asResults) write(stdout, stderr io.Writer, servers []*authServer, grants []string, sig *sigCost) int {
	code := 0
	ref := servers[0].name
	sigCPU := sig.perSignature()
	fmt.Fprintf(stdout, "\nreference: one ES256 signature of an mcpauth access token's claims with go-jose in this process: %.1f µs CPU (%d signatures, thread CPU time)\n",
		float64(sigCPU.Nanoseconds())/1e3, sig.n)
	for _, g := range grants {
		fmt.Fprintf(stdout, "\n%s: median over rounds; ratio = median of per-round %s ÷ server; CPU from /proc (10 ms ticks) over all rounds\n", g, ref)
		fmt.Fprintf(stdout, "  %-14s %10s %9s %9s %9s %12s %10s %6s\n", "server", "grants/s", "ratio", "p50", "p99", "CPU/grant", "÷ ES256", "wrong")
		refRates := res.rates(g, ref)
		perGrantOf := map[string]time.Duration{}
		for _, a := range servers {
			runs := res.runs[res.key(g, a.name)]
			rates := res.rates(g, a.name)
			var lat []time.Duration
			var grantsN, wrong int64
			var cpu time.Duration
			for _, r := range runs {
				lat = append(lat, r.latencies...)
				grantsN += r.grants
				wrong += r.wrong
				cpu += r.cpu
				for _, e := range r.errs {
					fmt.Fprintf(stderr, "mcpauth-load: %s %s: %s\n", a.name, g, e)
				}
			}
			slices.Sort(lat)
			ratios := make([]float64, len(rates))
			for i := range rates {
				ratios[i] = refRates[i] / rates[i]
			}
			perGrant := time.Duration(0)
			if grantsN > 0 {
				perGrant = cpu / time.Duration(grantsN)
			}
			perGrantOf[a.name] = perGrant
			ratio := "ref"
			if a.name != ref {
				ratio = fmt.Sprintf("x%.2f", median(ratios))
			}
			fmt.Fprintf(stdout, "  %-14s %10.0f %9s %9s %9s %10.0fµs %9.2fx %6d\n", a.name, median(rates), ratio,
				loadgen.Percentile(lat, 50).Round(10*time.Microsecond), loadgen.Percentile(lat, 99).Round(10*time.Microsecond),
				float64(perGrant.Nanoseconds())/1e3, float64(perGrant)/float64(max(sigCPU, 1)), wrong)
			if wrong != 0 && a.name == ref {
				code = 1
			}
			if wrong != 0 {
				fmt.Fprintf(stderr, "mcpauth-load: %s's last lines on stderr:\n%s\n", a.name, lastLines(a.child.Tail(), 5))
			}
		}
		for _, a := range servers[1:] {
			rates, ratios := res.rates(g, a.name), []float64{}
			for i, r := range rates {
				ratios = append(ratios, refRates[i]/r)
			}
			verdict := "ahead"
			if median(ratios) <= 1 {
				verdict = "NOT ahead"
			}
			switch a.name {
			case "floor":
				verdict = "throughput against the floor"
			case "mcpauth-before":
				verdict = "throughput against the -mcpauth-before build"
			}
			fmt.Fprintf(stdout, "  %s ÷ %s: x%.2f [%.2f–%.2f] (%.2f–%.2f): %s\n", ref, a.name, median(ratios),
				quantile(ratios, 0.25), quantile(ratios, 0.75), slices.Min(ratios), slices.Max(ratios), verdict)
		}
		writeCPUComparison(stdout, ref, perGrantOf, sigCPU)
	}
	if code != 0 {
		fmt.Fprintf(stderr, "mcpauth-load: %s answered wrongly (above)\n", ref)
	}
	return code
}

// writeCPUComparison prints, for one workload, the reference's CPU per
// grant against the floor's (the token endpoint on a plain net/http server
// with only the signature, the client check and the JSON answer), against
// one ES256 signature, and against the -mcpauth-before build.
func writeCPUComparison(w io.Writer, ref string, perGrant map[string]time.Duration, sig time.Duration) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	div := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }
	r := perGrant[ref]
	if f, ok := perGrant["floor"]; ok {
		reach := "the floor is within 2x ES256: the target is reachable over HTTP here"
		if f > 2*sig {
			reach = "the floor alone is above 2x ES256: over HTTP the target cannot be met here; compare with the floor"
		}
		fmt.Fprintf(w, "  CPU/grant: %s %.1fµs, floor %.1fµs, ES256 %.1fµs; %s ÷ floor x%.2f, %s ÷ ES256 x%.2f, floor ÷ ES256 x%.2f: %s\n",
			ref, us(r), us(f), us(sig), ref, div(r, f), ref, div(r, sig), div(f, sig), reach)
	}
	if b, ok := perGrant["mcpauth-before"]; ok {
		fmt.Fprintf(w, "  CPU/grant: %s %.1fµs, mcpauth-before %.1fµs: %s ÷ before x%.2f\n", ref, us(r), us(b), ref, div(r, b))
	}
}

// rates are the per-round grants/s of one workload on one server.
func (res *asResults) rates(g, server string) []float64 {
	var v []float64
	for _, r := range res.runs[res.key(g, server)] {
		v = append(v, float64(r.grants)/r.elapsed.Seconds())
	}
	return v
}

// sigCost times ES256 signatures of the claims of a token of ref's with
// go-jose, the cost every grant of ref's pays once.
type sigCost struct {
	signer  jose.Signer
	payload []byte
	n       int
	cpu     time.Duration
}

func newSigCost(ctx context.Context, ref *authServer) (*sigCost, error) {
	ans, err := ref.token(ctx, &http.Client{Transport: ref.transport, Timeout: 30 * time.Second},
		map[string][]string{"grant_type": {"client_credentials"}, "scope": {ref.ccScope}}, true, want{sub: asCCClient, clientID: asCCClient, verify: true})
	if err != nil {
		return nil, err
	}
	parts := strings.Split(ans.AccessToken, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "reference"))
	if err != nil {
		return nil, err
	}
	return &sigCost{signer: signer, payload: payload}, nil
}

// measure signs n times on one locked OS thread and adds that thread's
// CPU time.
func (s *sigCost) measure(n int) error {
	var err error
	cpu, ok := threadCPU(func() {
		for range n {
			var jws *jose.JSONWebSignature
			if jws, err = s.signer.Sign(s.payload); err != nil {
				return
			}
			if _, err = jws.CompactSerialize(); err != nil {
				return
			}
		}
	})
	if err != nil {
		return fmt.Errorf("the reference signature: %w", err)
	}
	if ok {
		s.n += n
		s.cpu += cpu
	}
	return nil
}

func (s *sigCost) perSignature() time.Duration {
	if s.n == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.n)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// moduleRoot is the directory of the go.mod above the working directory,
// or the working directory.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return wd
		}
		d = parent
	}
}
