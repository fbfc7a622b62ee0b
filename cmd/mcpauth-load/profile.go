package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// profileProtect loads each protect candidate with one workload at a time
// and saves a CPU profile and an allocation profile of that stretch (the
// pprof "seconds" delta) into -profile:
//
//	cpu-repeated.pprof  allocs-repeated.pprof   protect, one repeated token
//	cpu-fresh.pprof     allocs-fresh.pprof      protect, a fresh token per request
//	cpu-policy.pprof    allocs-policy.pprof     protect --policy, one repeated token
//
// Read them with `go tool pprof -top BINARY FILE`.
func profileProtect(ctx context.Context, o options, f *loadgen.Fixture, cands []*candidate, pprofAddrs [2]string, stdout io.Writer) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	byName := map[string]*candidate{}
	for _, c := range cands {
		byName[c.name] = c
	}
	repeated, err := f.FreshToken()
	if err != nil {
		return err
	}
	src := newTokenSource(f, repeated)
	client := f.Client(o.conc)
	defer client.CloseIdleConnections()
	secs := max(1, int(o.profileTime.Seconds()))
	for _, p := range []struct {
		name, cand, pprof string
		fresh             bool
	}{
		{"repeated", "protect", pprofAddrs[0], false},
		{"fresh", "protect", pprofAddrs[0], true},
		{"policy", "protect+policy", pprofAddrs[1], false},
	} {
		if p.fresh {
			// Enough for the profile at a generous rate; past them, tokens
			// are minted in the request loop (and show in no profile: the
			// generator is another process).
			if err := src.fresh.fill(4000 * (secs + 2)); err != nil {
				return err
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, kind := range []string{"profile", "allocs"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", p.pprof, kind, secs)
				errs[i] = fetchProfile(ctx, url, filepath.Join(o.profileDir, map[string]string{"profile": "cpu", "allocs": "allocs"}[kind]+"-"+p.name+".pprof"), time.Duration(secs+30)*time.Second)
			}()
		}
		rep, err := loadgen.Run(ctx, loadgen.Config{Target: byName[p.cand].url, Client: client, Next: src.nextFunc(p.fresh),
			Concurrency: o.conc, Duration: time.Duration(secs)*time.Second + 500*time.Millisecond})
		wg.Wait()
		if err != nil {
			return err
		}
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		fmt.Fprintf(stdout, "profile %s (%s): %.0f req/s, %d wrong; %s/{cpu,allocs}-%s.pprof\n", p.name, p.cand, rep.Throughput, rep.Wrong(), o.profileDir, p.name)
	}
	return nil
}

func fetchProfile(ctx context.Context, url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, io.LimitReader(resp.Body, 64<<20)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
