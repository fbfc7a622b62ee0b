package authservertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxMetadataBytes bounds the metadata document RewriteMetadata buffers.
const maxMetadataBytes = 1 << 20

var errTooLarge = errors.New("authservertest: metadata document over 1 MiB")

// RewriteAuthorizationResponse returns next with the query of each
// authorization response it sends changed by edit. An authorization
// response is a redirect (3xx) whose Location carries an "iss" parameter:
// [authserver.Server] adds iss to every authorization response, success or
// error (RFC 9207), and to no other redirect. Only the Location header
// changes; the response is not buffered.
func RewriteAuthorizationResponse(next http.Handler, edit func(q url.Values)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&headerHook{ResponseWriter: w, hook: func(status int, h http.Header) {
			if status/100 != 3 {
				return
			}
			u, err := url.Parse(h.Get("Location"))
			if err != nil || !u.Query().Has("iss") {
				return
			}
			q := u.Query()
			edit(q)
			u.RawQuery = q.Encode()
			h.Set("Location", u.String())
		}}, r)
	})
}

// headerHook calls hook with the final status and the header just before
// they are sent.
type headerHook struct {
	http.ResponseWriter
	hook func(status int, h http.Header)
	sent bool
}

func (w *headerHook) WriteHeader(status int) {
	if !w.sent && status >= 200 {
		w.sent = true
		w.hook(status, w.Header())
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *headerHook) Write(b []byte) (int, error) {
	if !w.sent {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *headerHook) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// RewriteMetadata returns next with each authorization server metadata
// document it serves (RFC 8414 and OpenID Connect discovery, at any
// well-known path) changed by edit, which gets the document's members. A
// document that is not a JSON object answered with 200 is passed on
// unchanged; one larger than 1 MiB is answered with 502 Bad Gateway.
func RewriteMetadata(next http.Handler, edit func(m map[string]any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.URL.Path, "/.well-known/oauth-authorization-server") &&
			!strings.Contains(r.URL.Path, "/.well-known/openid-configuration") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &bufferWriter{header: http.Header{}}
		next.ServeHTTP(rec, r)
		if rec.overflow {
			http.Error(w, "metadata document too large to rewrite", http.StatusBadGateway)
			return
		}
		body := rec.body.Bytes()
		if rec.status() == http.StatusOK {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			if dec.Decode(&m) == nil && m != nil {
				edit(m)
				if b, err := json.Marshal(m); err == nil {
					body = b
					rec.header.Set("Content-Length", strconv.Itoa(len(body)))
				}
			}
		}
		for k, vs := range rec.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.status())
		_, _ = w.Write(body)
	})
}

// bufferWriter records a response of at most maxMetadataBytes; past the
// bound its Write fails and it notes the overflow.
type bufferWriter struct {
	header   http.Header
	code     int
	body     bytes.Buffer
	overflow bool
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(status int) {
	if b.code == 0 && status >= 200 {
		b.code = status
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	if b.overflow || len(p) > maxMetadataBytes-b.body.Len() {
		b.overflow = true
		return 0, errTooLarge
	}
	return b.body.Write(p)
}

func (b *bufferWriter) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}
