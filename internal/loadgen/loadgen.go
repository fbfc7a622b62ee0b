package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
)

// Defaults applied to zero-valued Config fields.
const (
	DefaultConcurrency = 64
	DefaultDuration    = 10 * time.Second
	// maxSamples bounds the latency samples kept per worker; beyond it
	// every second sample replaces an older one, so memory stays bounded
	// however long the run.
	maxSamples = 1 << 16
)

// ErrConfig wraps every configuration error of Run.
var ErrConfig = errors.New("loadgen: invalid configuration")

// Request is one request to send: its kind (a label for the report), the
// bearer token ("" sends no Authorization header), whether the token goes
// in the query string instead, the DPoP proof (non-empty: the token goes
// as "Authorization: DPoP" with this proof in the DPoP header, RFC 9449
// §7.1), and the status the target must answer.
type Request struct {
	Kind       string
	Token      string
	InQuery    bool
	DPoP       string
	WantStatus int
}

// Config configures Run.
type Config struct {
	// Target is the MCP endpoint URL. REQUIRED.
	Target string
	// Client sends the requests. REQUIRED (give it a timeout).
	Client *http.Client
	// Next returns the request worker w sends as its i-th. It is called
	// concurrently from every worker. REQUIRED.
	Next func(w, i int) Request
	// Concurrency is the number of workers. Zero means [DefaultConcurrency].
	Concurrency int
	// Duration bounds the run. Zero means [DefaultDuration].
	Duration time.Duration
	// MaxRequests stops the run after this many requests in total. Zero
	// means no limit other than Duration.
	MaxRequests int64
	// Body is the JSON-RPC request body. Empty means a tools/call of
	// "whoami" in the 2026-07-28 shape.
	Body string
	// Now is the clock for latencies. Nil means time.Now.
	Now clock.Func
}

// DefaultBody is the request Run sends when Config.Body is empty.
const DefaultBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// Run sends requests until ctx ends, cfg.Duration elapses or
// cfg.MaxRequests were sent, and returns the report. Transport errors are
// counted, not returned; the error is for an invalid configuration only.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Target == "" || cfg.Client == nil || cfg.Next == nil {
		return nil, errors.Join(ErrConfig, errors.New("loadgen: Target, Client and Next are required"))
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Body == "" {
		cfg.Body = DefaultBody
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	mem := startMemSampler(ctx)
	var sent atomic.Int64
	workers := make([]*workerStats, cfg.Concurrency)
	var wg sync.WaitGroup
	start := cfg.Now.Now()
	for w := range workers {
		workers[w] = newWorkerStats()
		wg.Add(1)
		go func() {
			defer wg.Done()
			runWorker(ctx, &cfg, w, workers[w], &sent)
		}()
	}
	wg.Wait()
	elapsed := cfg.Now.Now().Sub(start)
	cancel()
	return buildReport(workers, elapsed, cfg.Concurrency, mem.stop()), nil
}

func runWorker(ctx context.Context, cfg *Config, w int, st *workerStats, sent *atomic.Int64) {
	for i := 0; ctx.Err() == nil; i++ {
		if cfg.MaxRequests > 0 && sent.Add(1) > cfg.MaxRequests {
			return
		}
		r := cfg.Next(w, i)
		t0 := cfg.Now.Now()
		status, err := send(ctx, cfg, r)
		d := cfg.Now.Now().Sub(t0)
		if err != nil && ctx.Err() != nil {
			return // the run ended while this request was in flight
		}
		st.record(r, status, err, d)
	}
}

func send(ctx context.Context, cfg *Config, r Request) (int, error) {
	target := cfg.Target
	if r.InQuery {
		target += "?access_token=" + r.Token
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(cfg.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "whoami")
	switch {
	case r.Token == "" || r.InQuery:
	case r.DPoP != "":
		req.Header.Set("Authorization", "DPoP "+r.Token)
		req.Header.Set("DPoP", r.DPoP)
	default:
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}
