package main

import (
	"bytes"
	"crypto/sha256"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// observe wraps a handler so that onRequest sees each request before the
// handler and onResponse sees its status and headers when the handler
// starts its response, before any byte reaches the peer. The narration uses
// it to report, in causal order, what the servers see. onRequest also gets
// the request's form-encoded body (see readForm).
func observe(next http.Handler, onRequest func(*http.Request, url.Values), onResponse func(*http.Request, int, http.Header)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, form := readForm(r)
		onRequest(r, form)
		ow := &observedWriter{ResponseWriter: w, report: func(status int) { onResponse(r, status, w.Header()) }}
		next.ServeHTTP(ow, r)
		ow.WriteHeader(http.StatusOK) // no-op if the handler already answered
	})
}

// readForm reads a form-encoded body of at most 64 KiB and returns it
// parsed, with a copy of r that replays the body to the handler (r itself
// is left as it was given); any other request is returned as it is, with
// no form.
func readForm(r *http.Request) (*http.Request, url.Values) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" || r.Body == nil {
		return r, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	replay := r.WithContext(r.Context())
	replay.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	if err != nil || len(data) > 64<<10 {
		return replay, nil
	}
	form, _ := url.ParseQuery(string(data))
	return replay, form
}

// observedWriter reports the status once, at the first WriteHeader or Write.
type observedWriter struct {
	http.ResponseWriter
	once   sync.Once
	report func(status int)
}

func (o *observedWriter) WriteHeader(status int) {
	o.once.Do(func() {
		o.report(status)
		o.ResponseWriter.WriteHeader(status)
	})
}

func (o *observedWriter) Write(p []byte) (int, error) {
	o.WriteHeader(http.StatusOK)
	return o.ResponseWriter.Write(p)
}

// Flush keeps event streams working through the wrapper.
func (o *observedWriter) Flush() {
	o.WriteHeader(http.StatusOK)
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (o *observedWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// observingTransport lets the narration see the MCP requests the SDK
// client sends and the answers, without changing them. It never reports a
// token: a new token is recognised by its hash and only its decoded payload
// is shown.
type observingTransport struct {
	base http.RoundTripper
	n    *narrator
}

func (t *observingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var payload map[string]any
	fresh := false
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		fresh = t.n.newToken(sha256.Sum256([]byte(tok)))
		if fresh {
			payload = jwtPayload(tok)
		}
	}
	hasToken := r.Header.Get("Authorization") != ""
	t.n.mcpRequest(r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), hasToken, fresh, payload)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		t.n.mcpFailure(err)
		return nil, err
	}
	t.n.mcpResponse(resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	return resp, nil
}

// jwtPayload decodes the claims of a JWS compact token for display. It
// verifies nothing; nil means the token is not a JWT.
func jwtPayload(tok string) map[string]any {
	var m map[string]any
	if jwtverify.UnsafeClaimsWithoutVerification(tok, &m) != nil {
		return nil
	}
	return m
}
