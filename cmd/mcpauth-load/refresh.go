package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/boltstore"
	"github.com/mcpauth/mcpauth/authserver/pgstore"
	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/seal"
	"github.com/mcpauth/mcpauth/pkce"
)

// refreshModes are the storage set-ups -refresh can compare.
var refreshModes = []string{"memory", "bolt", "postgres", "postgres3"}

const (
	loadClientID = "load"
	loadRedirect = "http://127.0.0.1:1/callback"
)

// refreshTarget is one set-up: replicas of the authorization server
// behind a round-robin front end on 127.0.0.1.
type refreshTarget struct {
	name    string
	url     string
	srv     *http.Server
	closers []io.Closer
	// pg are the PostgreSQL stores, one per replica, whose refresh
	// statements are counted by size.
	pg []*pgstore.Store
}

func (t *refreshTarget) Close() {
	if t.srv != nil {
		_ = t.srv.Close()
	}
	for _, c := range t.closers {
		_ = c.Close()
	}
}

// newRefreshTarget starts the set-up called mode.
func newRefreshTarget(ctx context.Context, mode, databaseURL, kek, tmp string) (*refreshTarget, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &refreshTarget{name: mode, url: "http://" + ln.Addr().String()}
	abort := func(err error) (*refreshTarget, error) {
		ln.Close()
		t.Close()
		return nil, err
	}
	replicas := 1
	var storage func() (authserver.Storage, io.Closer, error)
	switch mode {
	case "memory":
		storage = func() (authserver.Storage, io.Closer, error) { return authserver.NewMemoryStore().Storage(), nil, nil }
	case "bolt":
		storage = func() (authserver.Storage, io.Closer, error) {
			b, err := boltstore.Open(filepath.Join(tmp, "load.db"))
			if err != nil {
				return authserver.Storage{}, nil, err
			}
			return b.Storage(), b, nil
		}
	case "postgres", "postgres3":
		if databaseURL == "" {
			return abort(errors.New("-refresh " + mode + " needs -database-url (or $MCPAUTH_LOAD_DATABASE_URL)"))
		}
		if mode == "postgres3" {
			replicas = 3
		}
		key, err := seal.ParseKey(kek)
		if err != nil {
			return abort(err)
		}
		storage = func() (authserver.Storage, io.Closer, error) {
			p, err := pgstore.Open(ctx, databaseURL, pgstore.Config{KeyEncryptionKey: key})
			if err != nil {
				return authserver.Storage{}, nil, err
			}
			t.pg = append(t.pg, p)
			return p.Storage(), p, nil
		}
	default:
		return abort(fmt.Errorf("-refresh: unknown set-up %q (known: %s)", mode, strings.Join(refreshModes, ", ")))
	}
	var handlers []http.Handler
	for range replicas {
		st, closer, err := storage()
		if err != nil {
			return abort(err)
		}
		if closer != nil {
			t.closers = append(t.closers, closer)
		}
		as, err := authserver.New(authserver.Config{
			Issuer: t.url, InsecureAllowHTTPLoopback: true, Consent: authserver.ConsentAuto, Storage: st,
			Scopes:    []string{"mcp:tools"},
			Clients:   []authserver.Client{{ID: loadClientID, RedirectURIs: []string{loadRedirect}}},
			RateLimit: authserver.RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)},
		})
		if err != nil {
			return abort(err)
		}
		t.closers = append(t.closers, as)
		handlers = append(handlers, as)
	}
	var next atomic.Uint64
	t.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers[int(next.Add(1)-1)%len(handlers)].ServeHTTP(w, r)
	})}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

// login runs the code flow once and returns the refresh token.
func (t *refreshTarget) login(ctx context.Context, hc *http.Client) (string, error) {
	v := pkce.GenerateVerifier()
	q := url.Values{"response_type": {"code"}, "client_id": {loadClientID}, "redirect_uri": {loadRedirect}, "state": {"s"},
		"code_challenge": {pkce.Challenge(v)}, "code_challenge_method": {"S256"}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.url+"/authorize?"+q.Encode(), nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("authorize: %s", resp.Status)
	}
	tok, status, err := t.token(ctx, hc, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {v}, "client_id": {loadClientID}, "redirect_uri": {loadRedirect}})
	if err != nil || status != http.StatusOK {
		return "", fmt.Errorf("code exchange: %d %v", status, err)
	}
	return tok.RefreshToken, nil
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

func (t *refreshTarget) token(ctx context.Context, hc *http.Client, form url.Values) (*tokenAnswer, int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var tok tokenAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&tok); err != nil {
		return nil, resp.StatusCode, err
	}
	return &tok, resp.StatusCode, nil
}

// refreshResult is one timed round of one set-up.
type refreshResult struct {
	grants, wrong int64
	elapsed       time.Duration
	latencies     []time.Duration
	cost          roundCost
}

// runRefresh has conc workers each rotate its own refresh token for d:
// every answer must be 200 with a new access and refresh token. A request
// in flight when d ends is completed, not cancelled: a rotation the client
// never heard of would make its next use look like reuse.
func (t *refreshTarget) runRefresh(ctx context.Context, hc *http.Client, rts []string, d time.Duration) refreshResult {
	deadline := time.Now().Add(d)
	var res refreshResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := range rts {
		wg.Go(func() {
			var lat []time.Duration
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				tok, status, err := t.token(ctx, hc, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rts[w]}, "client_id": {loadClientID}})
				lat = append(lat, time.Since(t0))
				if err != nil || status != http.StatusOK || tok.AccessToken == "" || tok.RefreshToken == "" || tok.RefreshToken == rts[w] {
					atomic.AddInt64(&res.wrong, 1)
					continue
				}
				rts[w] = tok.RefreshToken
				atomic.AddInt64(&res.grants, 1)
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// runRefreshLoad compares the set-ups in interleaved rounds and prints
// refresh grants per second, latency and the ratio to the first set-up;
// then for each set-up the processor time per grant of this process and,
// on PostgreSQL, of the database server (its processes read from /proc,
// when it runs on this machine) and the grants per WAL flush (from
// pg_stat_wal, which the server updates about once a second, so the last
// moments of a round may count in the next).
func runRefreshLoad(ctx context.Context, o options, stdout, stderr io.Writer) int {
	modes := strings.Split(o.refresh, ",")
	databaseURL := cmp.Or(o.databaseURL, os.Getenv("MCPAUTH_LOAD_DATABASE_URL"))
	tmp, err := os.MkdirTemp("", "mcpauth-load-")
	if err != nil {
		return fail(stderr, err)
	}
	defer os.RemoveAll(tmp)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.conc * 2},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	targets := make([]*refreshTarget, len(modes))
	tokens := make([][]string, len(modes))
	for i, m := range modes {
		t, err := newRefreshTarget(ctx, strings.TrimSpace(m), databaseURL, o.kek, tmp)
		if err != nil {
			return fail(stderr, err)
		}
		defer t.Close()
		targets[i] = t
		for range o.conc {
			rt, err := t.login(ctx, hc)
			if err != nil {
				return fail(stderr, fmt.Errorf("%s: %w", t.name, err))
			}
			tokens[i] = append(tokens[i], rt)
		}
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return fail(stderr, err)
		}
	}
	meterURL := ""
	for _, t := range targets {
		if t.pg != nil {
			meterURL = databaseURL
		}
	}
	meter, err := newCostMeter(ctx, meterURL)
	if err != nil {
		return fail(stderr, err)
	}
	defer meter.Close()
	results := make([][]refreshResult, len(modes))
	for round := range o.rounds {
		for i, t := range targets {
			var stop func() error
			if o.profileDir != "" && round == o.rounds-1 {
				if stop, err = startCPUProfile(filepath.Join(o.profileDir, "cpu-refresh-"+t.name+".pprof")); err != nil {
					return fail(stderr, err)
				}
			}
			s0 := meter.sample(ctx)
			r := t.runRefresh(ctx, hc, tokens[i], o.dur)
			r.cost = meter.sample(ctx).since(s0)
			if stop != nil {
				if err := stop(); err != nil {
					return fail(stderr, err)
				}
			}
			results[i] = append(results[i], r)
			fmt.Fprintf(stderr, "round %d %-10s %8.0f grants/s, %d wrong\n", round+1, t.name, float64(r.grants)/r.elapsed.Seconds(), r.wrong)
		}
	}
	code := 0
	fmt.Fprintf(stdout, "refresh-token grants, %d workers, %d interleaved rounds of %s each\n", o.conc, o.rounds, o.dur)
	fmt.Fprintf(stdout, "%-10s %12s %8s %10s %10s %6s\n", "set-up", "grants/s", "ratio", "p50", "p99", "wrong")
	var base float64
	for i, t := range targets {
		var rates []float64
		var lat []time.Duration
		var wrong int64
		for _, r := range results[i] {
			rates = append(rates, float64(r.grants)/r.elapsed.Seconds())
			lat = append(lat, r.latencies...)
			wrong += r.wrong
		}
		slices.Sort(rates)
		slices.Sort(lat)
		med := rates[len(rates)/2]
		if i == 0 {
			base = med
		}
		fmt.Fprintf(stdout, "%-10s %12.0f %7.2fx %10s %10s %6d\n", t.name, med, med/base,
			loadgen.Percentile(lat, 50).Round(10*time.Microsecond), loadgen.Percentile(lat, 99).Round(10*time.Microsecond), wrong)
		if wrong != 0 {
			code = 1
		}
		if o.minRatio > 0 && i > 0 && med/base < o.minRatio {
			fmt.Fprintf(stderr, "mcpauth-load: %s at %.2fx of %s, under -min-ratio %.2f\n", t.name, med/base, targets[0].name, o.minRatio)
			code = 1
		}
	}
	for i, t := range targets {
		if len(t.pg) > 0 {
			fmt.Fprintf(stdout, "%-10s %s\n", t.name, t.batchSizes())
		}
		var grants int64
		var costs []roundCost
		for _, r := range results[i] {
			grants += r.grants
			costs = append(costs, r.cost)
		}
		fmt.Fprintf(stdout, "%-10s %s\n", t.name, costLine(grants, costs, len(t.pg) > 0))
	}
	return code
}

// batchBuckets are the ranges of statement sizes that batchSizes reports.
var batchBuckets = [][2]int{{1, 1}, {2, 2}, {3, 4}, {5, 8}, {9, 16}, {17, 32}, {33, 64}}

// batchSizes describes the refresh statements of t's PostgreSQL stores
// over all rounds: how many, how many refreshes each carried on average
// and at the median refresh, and the share of statements in each range
// of sizes.
func (t *refreshTarget) batchSizes() string {
	var counts []uint64
	for _, p := range t.pg {
		for n, c := range p.RefreshBatchSizes() {
			if n >= len(counts) {
				counts = append(counts, make([]uint64, n+1-len(counts))...)
			}
			counts[n] += c
		}
	}
	var stmts, uses uint64
	for n, c := range counts {
		stmts += c
		uses += uint64(n) * c
	}
	if stmts == 0 {
		return "refresh statements: none"
	}
	median, seen := 0, uint64(0)
	for n, c := range counts {
		if seen += uint64(n) * c; median == 0 && seen*2 >= uses {
			median = n
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "refresh statements: %d for %d refreshes, %.2f per statement, median refresh in one of %d; statements of",
		stmts, uses, float64(uses)/float64(stmts), median)
	for _, r := range batchBuckets {
		var c uint64
		for n := r[0]; n <= r[1] && n < len(counts); n++ {
			c += counts[n]
		}
		label := strconv.Itoa(r[0])
		if r[1] != r[0] {
			label += "-" + strconv.Itoa(r[1])
		}
		fmt.Fprintf(&b, " %s: %.1f%%", label, 100*float64(c)/float64(stmts))
	}
	return b.String()
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
