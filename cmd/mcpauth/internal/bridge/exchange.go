package bridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// callError is a failure with the JSON-RPC error the host gets; code 0
// means the host cancelled the request and gets nothing.
type callError struct {
	code int
	msg  string
}

func (e *callError) Error() string { return e.msg }

func failf(code int, format string, args ...any) error {
	return &callError{code: code, msg: "mcpauth bridge: " + fmt.Sprintf(format, args...)}
}

// classify turns any failure of a call into the error the host gets.
func (b *Bridge) classify(ctx context.Context, err error) *callError {
	var ce *callError
	switch {
	case errors.As(err, &ce):
		return ce
	case ctx.Err() != nil && b.stopping.Load():
		return &callError{code: CodeShutdown, msg: "mcpauth bridge: exiting; the request was cancelled after the grace period"}
	case ctx.Err() != nil:
		return &callError{}
	}
	if b.cfg.AuthError != nil {
		if msg, ok := b.cfg.AuthError(err); ok {
			return &callError{code: CodeAuthorization, msg: "mcpauth bridge: " + msg}
		}
	}
	return &callError{code: CodeUnreachable, msg: fmt.Sprintf("mcpauth bridge: cannot reach the server (%v); the next message tries again", err)}
}

func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || raw[0] != '{' {
		return errNotMessage
	}
	return jsonx.DecodeObject(raw, v)
}

// withWroteRequest calls f when a request made with ctx has been written.
func withWroteRequest(ctx context.Context, f func()) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { f() }})
}

// newRequest builds a request to the endpoint with the extra headers and
// the session's.
func (b *Bridge) newRequest(ctx context.Context, method string, body []byte, sid, version string) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.cfg.URL, r)
	if err != nil {
		return nil, err
	}
	for k, v := range b.cfg.Header {
		req.Header[k] = append([]string(nil), v...)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	return req, nil
}

func (b *Bridge) sessionState() (sid, version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.session, b.version
}

// exchange POSTs m and hands every message of the answer to sink. For a
// request it succeeds only once the answer to it was handed over.
func (b *Bridge) exchange(ctx context.Context, m *message, sink func(*message), mayReinit bool) error {
	sid, version := b.sessionState()
	p := m.params()
	switch {
	case p.Meta.ProtocolVersion != "":
		version = p.Meta.ProtocolVersion // 2026-07-28: the header equals the body's (TR-04)
	case m.Method == "initialize":
		version = ""
	}
	req, err := b.newRequest(ctx, http.MethodPost, m.raw, sid, version)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if m.Method != "" {
		req.Header.Set("Mcp-Method", HeaderValue(m.Method))
	}
	if name, ok := m.nameHeader(p); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if m.Method == "tools/call" && version >= "2026-07-28" {
		for k, v := range b.paramHeaderValues(p.Name, m.Params) {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if m.Method == "initialize" && resp.StatusCode/100 == 2 {
		b.mu.Lock()
		b.session = resp.Header.Get("Mcp-Session-Id")
		b.mu.Unlock()
		inner := sink
		sink = func(a *message) {
			if a.answers(m.ID) {
				b.negotiated(a)
			}
			inner(a)
		}
	}
	if m.Method == "tools/list" && m.isRequest() {
		inner := sink
		sink = func(a *message) {
			if a.answers(m.ID) && a.Result != nil {
				b.learnTools(a.Result)
			}
			inner(a)
		}
	}
	switch status := resp.StatusCode; {
	case status == http.StatusNotFound && sid != "" && m.Method != "initialize" && mayReinit:
		drain(resp.Body)
		if err := b.reinitialize(ctx, sid); err != nil {
			return err
		}
		return b.exchange(ctx, m, sink, false)
	case status == http.StatusAccepted:
		if m.isRequest() {
			return failf(CodeBadResponse, "the server accepted the request without answering it (HTTP 202)")
		}
		return nil
	case status/100 == 2:
		return b.relayAnswer(ctx, resp, m, sink)
	case status/100 == 3:
		return failf(CodeBadResponse, "the server redirected (HTTP %d) to %s; the bridge does not follow redirects: use the final URL",
			status, originOf(resp.Header.Get("Location")))
	default:
		return b.errorAnswer(resp, m, sink)
	}
}

// relayAnswer relays a 2xx answer: one JSON message or an event stream.
func (b *Bridge) relayAnswer(ctx context.Context, resp *http.Response, m *message, sink func(*message)) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		body, err := readCapped(resp.Body, resp.ContentLength, b.cfg.MaxMessageSize, &b.bufs)
		defer b.bufs.put(body) // once the answer has been written to the host
		if err != nil {
			return b.readFailure(ctx, err)
		}
		a, err := parseMessage(body)
		if err != nil {
			return failf(CodeBadResponse, "the server's answer is not a JSON-RPC message: %v", err)
		}
		if m.isRequest() && !a.answers(m.ID) {
			return failf(CodeBadResponse, "the server's answer is not the answer to this request (another id or not a response)")
		}
		sink(a)
		return nil
	case "text/event-stream":
		return b.relayStream(ctx, resp.Body, m, sink)
	}
	if m.isRequest() {
		return failf(CodeBadResponse, "the server answered with Content-Type %q, not JSON or an event stream", mt)
	}
	return nil
}

// relayStream relays each event of a POST's stream as it arrives, until
// the answer to the request (then the stream is closed) or the end. A
// 2025-11-25 stream that breaks before the answer, after an event with an
// id, is resumed with GET and Last-Event-ID (2025-11-25 §Resumability and
// Redelivery) at most maxResumes times.
func (b *Bridge) relayStream(ctx context.Context, body io.Reader, m *message, sink func(*message)) error {
	sr := newSSEReader(body, b.cfg.MaxMessageSize, &b.bufs)
	defer func() { sr.release() }()
	lastID := ""
	for resumes := 0; ; {
		ev, err := sr.next()
		if err != nil {
			if !m.isRequest() && errors.Is(err, io.EOF) {
				return nil
			}
			if lastID == "" || resumes >= maxResumes || ctx.Err() != nil || errors.Is(err, errTooLarge) {
				return b.readFailure(ctx, err)
			}
			resumes++
			next, rerr := b.resume(ctx, lastID, sr.retry)
			if rerr != nil {
				return b.readFailure(ctx, err)
			}
			defer next.Close()
			sr.release()
			sr = newSSEReader(next, b.cfg.MaxMessageSize, &b.bufs)
			continue
		}
		lastID = cmp.Or(ev.id, lastID)
		if !ev.isMessage() {
			continue
		}
		a, err := parseMessage(ev.data)
		if err != nil {
			return failf(CodeBadResponse, "the server sent an event that is not a JSON-RPC message (%v); stream closed", err)
		}
		switch {
		case m.isRequest() && a.answers(m.ID):
			sink(a)
			return nil
		case a.isResponse():
			// A stream carries the answer to its own request only; any
			// other response would reach the host as the answer to a
			// request of its own it never got from this stream.
			b.log.Warn("dropped a response with another id from a request's stream")
		default:
			sink(a)
		}
	}
}

// resume reopens a broken stream after the retry delay the server asked
// for (at most maxResumeDelay; one second if none).
func (b *Bridge) resume(ctx context.Context, lastID string, retry time.Duration) (io.ReadCloser, error) {
	sid, version := b.sessionState()
	if sid == "" || version == "" || version >= "2026-07-28" {
		return nil, errors.New("no resumption without a 2025-11-25 session")
	}
	if retry <= 0 {
		retry = time.Second
	}
	t := time.NewTimer(min(retry, maxResumeDelay))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	// The session the stream belongs to, not one started while waiting:
	// its event ids mean nothing in another.
	resp, err := b.openStream(ctx, sid, version, lastID)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		drain(resp.Body)
		return nil, fmt.Errorf("resuming: HTTP %d", resp.StatusCode)
	}
	b.log.Info("resumed a broken stream", "last_event_id", lastID)
	return resp.Body, nil
}

// openStream GETs the event stream of session sid, after the event lastID
// if set (Last-Event-ID).
func (b *Bridge) openStream(ctx context.Context, sid, version, lastID string) (*http.Response, error) {
	req, err := b.newRequest(ctx, http.MethodGet, nil, sid, version)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return b.hc.Do(req)
}

// readFailure describes a failed read of an answer.
func (b *Bridge) readFailure(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errTooLarge):
		return failf(CodeBadResponse, "the server's answer is over the limit of %d bytes per message; stream closed", b.cfg.MaxMessageSize)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return failf(CodeUnreachable, "the server closed the stream before answering; the next message tries again")
	}
	return failf(CodeUnreachable, "the stream from the server broke (%v); the next message tries again", err)
}

// errorAnswer handles a 4xx or 5xx: a JSON-RPC error for the request in
// the body is relayed as is; anything else becomes a bridge error.
func (b *Bridge) errorAnswer(resp *http.Response, m *message, sink func(*message)) error {
	body, _ := readCapped(resp.Body, resp.ContentLength, maxErrorBody, nil)
	if a, err := parseMessage(body); err == nil && a.Error != nil && m.isRequest() && a.answers(m.ID) {
		sink(a)
		return nil
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return &callError{code: CodeAuthorization, msg: fmt.Sprintf(
			"mcpauth bridge: the server refused the access token (HTTP %d %s); run `mcpauth login` for this URL with the bridge's flags (add --scopes if the server needs more), then retry",
			resp.StatusCode, challengeError(resp.Header))}
	case http.StatusNotFound:
		if m.Method == "initialize" || resp.Header.Get("Mcp-Session-Id") == "" {
			return failf(CodeBadResponse, "the server answered HTTP 404: check the URL")
		}
	}
	return failf(CodeBadResponse, "the server answered HTTP %d", resp.StatusCode)
}

// challengeError returns the error code of a Bearer or DPoP challenge, if
// any.
func challengeError(h http.Header) string {
	challenges, _ := oauthmeta.ParseChallenges(h.Values("WWW-Authenticate")...)
	for _, c := range challenges {
		if code := c.Value(oauthmeta.ParamError); code != "" && len(code) < 64 {
			return code
		}
	}
	return ""
}

// negotiated records the protocol version of an initialize answer.
func (b *Bridge) negotiated(a *message) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if decodeParams(a.Result, &r) == nil && r.ProtocolVersion != "" && len(r.ProtocolVersion) <= 64 {
		b.mu.Lock()
		b.version = r.ProtocolVersion
		b.mu.Unlock()
	}
}

// reinitialize starts a new session after the server forgot staleSID (a
// 404, MCP 2025-11-25 §Session Management): the host's own initialize
// request again, under an id of the bridge, then notifications/initialized.
// Concurrent callers share one new session.
func (b *Bridge) reinitialize(ctx context.Context, staleSID string) error {
	b.reinitMu.Lock()
	defer b.reinitMu.Unlock()
	b.mu.Lock()
	if b.session != staleSID {
		b.mu.Unlock()
		return nil // another request started the new session
	}
	init := b.init
	b.session = ""
	b.reinits++
	n := b.reinits
	b.mu.Unlock()
	if init == nil {
		return failf(CodeUnreachable, "the server ended the session and there is no initialize request to start a new one")
	}
	b.log.Info("the server ended the session; starting a new one")
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("mcpauth-bridge-initialize-%d", n),
		"method": "initialize", "params": init.Params})
	im, err := parseMessage(raw)
	if err != nil {
		return err
	}
	if err := b.exchange(ctx, im, func(*message) {}, false); err != nil {
		return b.classify(ctx, err)
	}
	notif, _ := parseMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err := b.exchange(ctx, notif, func(*message) {}, false); err != nil {
		return b.classify(ctx, err)
	}
	b.startGET()
	return nil
}

// startGET opens the GET stream for server-initiated messages of a
// 2025-11-25 session, unless one is open.
func (b *Bridge) startGET() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.getRunning || b.version == "" || b.version >= "2026-07-28" || b.bgCtx.Err() != nil {
		return
	}
	b.getRunning = true
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		b.listen(b.bgCtx)
		b.mu.Lock()
		b.getRunning = false
		b.mu.Unlock()
	}()
}

// listen keeps the GET stream open, resuming with Last-Event-ID after a
// break, until the bridge stops, the server says it has none (405) or the
// session is gone (404), or it failed maxGETFailures times in a row.
func (b *Bridge) listen(ctx context.Context) {
	lastID, failures := "", 0
	for ctx.Err() == nil && failures < maxGETFailures {
		sid, version := b.sessionState()
		resp, err := b.openStream(ctx, sid, version, lastID)
		switch {
		case err != nil:
			failures++
			b.log.Debug("GET stream", "error", err)
		case resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotFound:
			drain(resp.Body)
			b.log.Debug("no GET stream", "status", resp.StatusCode)
			return
		case resp.StatusCode != http.StatusOK:
			drain(resp.Body)
			failures++
			b.log.Debug("GET stream", "status", resp.StatusCode)
		default:
			failures = 0
			sr := newSSEReader(resp.Body, b.cfg.MaxMessageSize, &b.bufs)
			for {
				ev, err := sr.next()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, io.EOF) {
						b.log.Warn("GET stream broken", "error", err)
						failures++
					}
					break
				}
				lastID = cmp.Or(ev.id, lastID)
				if !ev.isMessage() {
					continue
				}
				a, err := parseMessage(ev.data)
				if err != nil {
					b.log.Warn("GET stream: an event that is not a JSON-RPC message was dropped", "error", err)
					continue
				}
				b.toHost(a)
			}
			sr.release()
			resp.Body.Close()
		}
		t := time.NewTimer(time.Duration(failures+1) * time.Second)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// deleteSession ends the session, if any (2025-11-25 §Session Management).
func (b *Bridge) deleteSession() {
	sid, version := b.sessionState()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.WithoutCancel(b.bgCtx), unattendedKey{}, true), deleteTimeout)
	defer cancel()
	req, err := b.newRequest(ctx, http.MethodDelete, nil, sid, version)
	if err != nil {
		return
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.log.Warn("could not delete the session", "error", err)
		return
	}
	drain(resp.Body)
	b.log.Debug("session deleted", "status", resp.StatusCode)
}

// readCapped reads a body whole if it holds at most max bytes. A body of
// declared length n (-1 if unknown) is read into one buffer of that size,
// from pool when it is large; one of unknown length is accumulated (see
// accumulator), never held more than twice. It returns the buffer holding
// the body, or one borrowed from the pool (emptied) on failure: the
// caller gives it back.
func readCapped(r io.Reader, n int64, max int, pool *bufPool) ([]byte, error) {
	switch {
	case n > int64(max):
		return nil, errTooLarge
	case n >= 0:
		var buf []byte
		if n >= minPooled {
			buf = pool.get(int(n))
		}
		if int64(cap(buf)) < n {
			pool.put(buf)
			buf = make([]byte, n, withHeadroom(int(n)))
		}
		data := buf[:n]
		if _, err := io.ReadFull(r, data); err != nil {
			return buf[:0], err
		}
		return data, nil
	}
	acc := accumulator{pool: pool}
	if _, err := io.Copy(&acc, io.LimitReader(r, int64(max)+1)); err != nil {
		return acc.first(), err
	}
	if acc.Len() > max {
		return acc.first(), errTooLarge
	}
	return acc.Bytes(), nil
}

func drain(r io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r, maxErrorBody))
	r.Close()
}

// originOf reports the origin of a redirect target, not its path or query.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "another URL"
	}
	return u.Scheme + "://" + u.Host
}
