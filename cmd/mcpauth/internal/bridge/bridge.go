package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
)

// Defaults of [Config].
const (
	DefaultMaxMessageSize = 16 << 20
	DefaultMaxInFlight    = 64
	DefaultGracePeriod    = 5 * time.Second
)

const (
	maxErrorBody   = 64 << 10         // bytes of a non-2xx answer read for a JSON-RPC error
	deleteTimeout  = 5 * time.Second  // the DELETE of the session on exit
	maxGETFailures = 5                // consecutive GET stream failures before giving up until the next initialize
	maxResumes     = 3                // resumptions of one broken POST stream
	maxResumeDelay = 10 * time.Second // longest wait before a resumption the server may ask for
	minStallWait   = time.Second      // shortest time without progress after which a host counts as no longer reading stdout
)

// Config configures a [Bridge].
type Config struct {
	// URL is the MCP endpoint. REQUIRED.
	URL string
	// Transport sends every request; it is where authorization happens
	// (package client's Transport). REQUIRED. Redirects are not followed.
	Transport http.RoundTripper
	// Header holds extra static headers for every request. The bridge's own
	// headers (Content-Type, Accept, Mcp-*, Last-Event-ID) override any
	// of the same name. Credentials are refused ([New] fails on
	// Authorization, Proxy-Authorization, Cookie or DPoP): authorization
	// is Transport's.
	Header http.Header
	// MaxMessageSize bounds one message in either direction, in bytes.
	// Zero means DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxInFlight bounds the host requests outstanding at once; further
	// requests wait to be sent. Zero means DefaultMaxInFlight.
	MaxInFlight int
	// GracePeriod is how long requests in flight may go on after stdin
	// closes or ctx ends, before they are cancelled. Zero means
	// DefaultGracePeriod.
	GracePeriod time.Duration
	// AuthError turns an error of Transport into the message of a
	// CodeAuthorization error for the host, telling the user what to do;
	// false means the error is not about authorization (CodeUnreachable).
	// Nil means every Transport error is CodeUnreachable.
	AuthError func(err error) (string, bool)
	// OnURLElicitationRequired, when set, is called with the data of
	// every JSON-RPC error -32042 (a 2025-11-25 server's URL elicitation)
	// before it is relayed to the host unchanged (possibly from several
	// goroutines at once), so that a user whose
	// host cannot show it still learns of it. The bridge never opens or
	// fetches the URLs.
	OnURLElicitationRequired func(data json.RawMessage)
	// Elicit, when set, answers the URL elicitations of the tools/call,
	// prompts/get and resources/read requests of a host that did not
	// declare URL-mode elicitation: it gets them as the data of a -32042
	// error ({"elicitations":[…]}, the inputRequests of a 2026-07-28
	// InputRequiredResult turned into that form, keyed by elicitationId),
	// asks the user, and returns true once the user accepted and finished
	// them all. The bridge then retries the request (2026-07-28: with
	// inputResponses and the server's requestState; it also answers a
	// decline that way) and the host gets the retry's answer; a declined
	// 2025-11-25 elicitation reaches the host as the server sent it. It
	// may be called from several goroutines at once and must return when
	// ctx ends. Nil leaves every answer to the host (and to
	// OnURLElicitationRequired).
	Elicit func(ctx context.Context, data json.RawMessage) (bool, error)
	// MaxElicitationRounds bounds the retries of one request after
	// elicitations. Zero means DefaultMaxElicitationRounds.
	MaxElicitationRounds int
	// Logger receives what the bridge has to say (never a message body).
	// Nil means no logging.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Bridge relays one host's stdio to one MCP server. Create it with [New]
// and call Run once.
type Bridge struct {
	cfg   Config
	clock clock.Func // cfg.Now
	hc    *http.Client
	log   *slog.Logger
	out   *hostWriter
	sem   chan struct{}
	bufs  bufPool // the buffers server messages are read into

	stopping atomic.Bool // Run is shutting down: cancellations are CodeShutdown

	mu         sync.Mutex
	session    string   // Mcp-Session-Id (2025-11-25)
	version    string   // protocol version the initialize answer negotiated
	init       *message // the host's last initialize request, for a new session
	getRunning bool
	calls      map[*call]struct{}
	reinits    int
	reinitMu   sync.Mutex
	// paramHeaders maps tool names to their x-mcp-header bindings, learnt
	// from tools/list answers (bounded by maxHeaderTools).
	paramHeaders map[string][]paramBinding

	callWG sync.WaitGroup
	bgWG   sync.WaitGroup
	bgCtx  context.Context
}

// call is one host message on its way to the server.
type call struct {
	msg    *message
	cancel context.CancelFunc
}

// New checks cfg and returns a Bridge. It starts nothing.
func New(cfg Config) (*Bridge, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || !u.IsAbs() || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("bridge: URL %q is not an absolute http(s) URL", cfg.URL)
	}
	if cfg.Transport == nil {
		return nil, errors.New("bridge: Transport is required")
	}
	for k := range cfg.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "Proxy-Authorization", "Cookie", "Dpop":
			return nil, fmt.Errorf("bridge: Header %s is refused: credentials come from Transport only", k)
		}
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.MaxElicitationRounds <= 0 {
		cfg.MaxElicitationRounds = DefaultMaxElicitationRounds
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{
		cfg:   cfg,
		clock: cfg.Now,
		hc: &http.Client{Transport: cfg.Transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		log:   log,
		sem:   make(chan struct{}, cfg.MaxInFlight),
		calls: make(map[*call]struct{}),
	}, nil
}

type receivedKey struct{}

// ReceivedAt returns when the bridge read the host message whose request
// ctx belongs to (the ctx an http.RoundTripper or an authorizer under the
// bridge sees). An authorizer uses it to answer messages that were already
// waiting when a login failed with that failure instead of a new login.
func ReceivedAt(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(receivedKey{}).(time.Time)
	return t, ok
}

type unattendedKey struct{}

// Unattended reports whether ctx belongs to a request the bridge makes on
// its own while nobody may be watching (the DELETE of the session on exit):
// an authorizer under the bridge should fail it rather than start an
// interactive login.
func Unattended(ctx context.Context) bool {
	v, _ := ctx.Value(unattendedKey{}).(bool)
	return v
}

type hostLine struct {
	line []byte
	err  error
}

// Run relays messages until stdin ends, the host stops reading stdout or
// ctx ends (a signal); then requests in flight get GracePeriod to finish
// before they are cancelled (each gets a CodeShutdown error), the session
// is deleted, and Run returns nil. A read of stdin may still be pending
// when Run returns; it ends with stdin. So may a write to a host that
// stopped reading stdout, once writes have made no progress for another
// grace period (at least a second); it ends with stdout.
func (b *Bridge) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	b.out = newHostWriter(stdout)
	base, cancelAll := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelAll()
	bg, cancelBG := context.WithCancel(base)
	defer cancelBG()
	b.bgCtx = bg

	lines := make(chan hostLine)
	go func() {
		hr := &hostReader{r: bufio.NewReaderSize(stdin, 64<<10), max: b.cfg.MaxMessageSize, pool: &b.bufs}
		for {
			line, err := hr.next()
			select {
			case lines <- hostLine{line, err}:
			case <-base.Done():
				return
			}
			if err != nil && !errors.Is(err, errTooLarge) {
				return
			}
		}
	}()

	var reason string
loop:
	for {
		select {
		case <-ctx.Done():
			reason = "signal"
			break loop
		case <-b.out.broken:
			reason = "the host stopped reading"
			break loop
		case l := <-lines:
			switch {
			case errors.Is(l.err, errTooLarge):
				_ = b.out.write(errorMessage(nil, CodeInvalidRequest,
					fmt.Sprintf("mcpauth bridge: message over %d bytes dropped", b.cfg.MaxMessageSize)))
			case l.err != nil:
				reason = "stdin closed"
				if !errors.Is(l.err, io.EOF) {
					reason = "reading stdin: " + l.err.Error()
				}
				break loop
			default:
				b.dispatch(base, ctx, l.line)
			}
		}
	}
	b.log.Info("shutting down", "reason", reason)
	b.shutdown(cancelBG)
	b.bufs.close()
	return nil
}

// dispatch sends one host message on its own goroutine and returns once
// the request has been written (or has failed), so that messages are sent
// in the order the host wrote them. Each travels on a connection of its
// own, so a server may still see them in another order.
func (b *Bridge) dispatch(base, signal context.Context, line []byte) {
	m, err := parseMessage(line)
	if err != nil {
		b.bufs.put(line)
		code := CodeInvalidRequest
		if !errors.Is(err, errBatch) && !errors.Is(err, errNotMessage) {
			code = CodeParseError
		}
		_ = b.out.write(errorMessage(nil, code, "mcpauth bridge: the line is not one JSON-RPC 2.0 message ("+err.Error()+"); it was not sent"))
		return
	}
	if m.Method == "initialize" {
		// Kept for a new session: a copy, as line goes back to the pool.
		init, _ := parseMessage(bytes.Clone(m.raw))
		b.mu.Lock()
		b.init = init
		b.mu.Unlock()
	}
	if m.isRequest() {
		select {
		case b.sem <- struct{}{}:
		case <-signal.Done():
			_ = b.out.write(errorMessage(m.ID, CodeShutdown, "mcpauth bridge: exiting; the request was not sent"))
			b.bufs.put(line)
			return
		}
	}
	ctx, cancel := context.WithCancel(context.WithValue(base, receivedKey{}, b.clock.Now()))
	written := make(chan struct{})
	var once sync.Once
	ctx = withWroteRequest(ctx, func() { once.Do(func() { close(written) }) })
	c := &call{msg: m, cancel: cancel}
	b.mu.Lock()
	b.calls[c] = struct{}{}
	b.mu.Unlock()
	done := make(chan struct{})
	b.callWG.Add(1)
	go func() {
		defer b.callWG.Done()
		defer close(done)
		defer func() {
			cancel()
			b.mu.Lock()
			delete(b.calls, c)
			b.mu.Unlock()
			if m.isRequest() {
				<-b.sem
			}
			b.bufs.put(line) // nothing refers to the message any more
		}()
		b.handle(ctx, c)
	}()
	select {
	case <-written:
	case <-done:
	case <-signal.Done():
	}
}

// handle sends one host message and relays the answer.
func (b *Bridge) handle(ctx context.Context, c *call) {
	m := c.msg
	var err error
	if b.elicitsFor(m) {
		err = b.exchangeEliciting(ctx, m)
	} else {
		err = b.exchange(ctx, m, b.toHost, true)
	}
	if m.Method == "notifications/cancelled" {
		b.cancelLocal(m) // closing the stream cancels the request too (TR-10)
	}
	if err == nil {
		if m.Method == "notifications/initialized" {
			b.startGET()
		}
		return
	}
	ce := b.classify(ctx, err)
	switch {
	case ce.code == 0:
		// cancelled by the host: no answer is due
	case m.isRequest():
		_ = b.out.write(errorMessage(m.ID, ce.code, ce.msg))
		b.log.Warn("request failed", "method", m.Method, "code", ce.code, "error", ce.msg)
	default:
		b.log.Warn("message not delivered", "method", m.Method, "error", ce.msg)
	}
}

// toHost relays one server message to the host.
func (b *Bridge) toHost(m *message) {
	if b.cfg.OnURLElicitationRequired != nil && m.Error != nil && bytes.Contains(m.Error, []byte("-32042")) {
		var e struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(m.Error, &e) == nil && e.Code == codeURLElicitationRequired {
			b.cfg.OnURLElicitationRequired(e.Data)
		}
	}
	_ = b.out.write(m.raw)
}

// codeURLElicitationRequired is the 2025-11-25 error that carries URL
// elicitations.
const codeURLElicitationRequired = -32042

// cancelLocal closes the stream of the request a notifications/cancelled
// names.
func (b *Bridge) cancelLocal(n *message) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if decodeParams(n.Params, &p) != nil || p.RequestID == nil {
		return
	}
	id := compactID(p.RequestID)
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.calls {
		if c.msg.isRequest() && string(c.msg.ID) == string(id) {
			c.cancel()
		}
	}
}

// shutdown lets calls finish within the grace period, cancels the rest,
// stops the GET stream and deletes the session.
func (b *Bridge) shutdown(cancelBG context.CancelFunc) {
	cancelBG()
	done := make(chan struct{})
	go func() { b.callWG.Wait(); close(done) }()
	timer := time.NewTimer(b.cfg.GracePeriod)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		b.stopping.Store(true)
		b.mu.Lock()
		n := len(b.calls)
		for c := range b.calls {
			c.cancel()
		}
		b.mu.Unlock()
		b.log.Info("cancelled requests still in flight after the grace period", "count", n, "grace", b.cfg.GracePeriod)
		// A cancelled call ends soon (its answer is written) unless it is
		// blocked writing to a host that no longer reads stdout (a write
		// to a pipe does not heed ctx): Run gives up on those once no
		// write has made progress for a whole grace period (at least
		// minStallWait, so that a host that is merely slow to be
		// scheduled still gets its answers).
		if !b.awaitCalls(done, timer) {
			b.log.Warn("exiting while answers are still blocked on a host that stopped reading stdout")
			b.deleteSession()
			return
		}
	}
	b.bgWG.Wait()
	b.deleteSession()
}

// awaitCalls waits for the cancelled calls to end (done) and reports
// whether they did; it returns false once writes to the host have been
// stalled for a grace period (at least minStallWait).
func (b *Bridge) awaitCalls(done <-chan struct{}, timer *time.Timer) bool {
	wait := max(b.cfg.GracePeriod, minStallWait)
	for {
		before := b.out.finished.Load()
		timer.Reset(wait)
		select {
		case <-done:
			return true
		case <-timer.C:
			if b.out.stalled(before) {
				return false
			}
		}
	}
}
