// Package revproxy holds the pieces of mcpauth's reverse proxy to an
// upstream that do not depend on what sits in front of it: the server
// that accepts its clients, full duplex for request bodies, the upstream
// transport and the copy-buffer pool. `mcpauth protect` uses them, and so
// do the proxies its benchmark measures it against, so that a comparison
// measures the work in front of the proxy, not connection reuse or buffer
// allocation.
//
//	p := &httputil.ReverseProxy{Rewrite: rewrite, Transport: revproxy.Transport(), BufferPool: revproxy.NewBufferPool()}
package revproxy

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Server returns the server mcpauth's commands accept clients with (and so
// the proxies measured against protect): header reads are
// bounded in time and size and idle connections closed, but there is no
// read or write timeout, since a request or a response may be a long
// event stream.
func Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Transport returns the proxy's client to its upstream: no environment
// proxy, bounded connects and idle connections, and no response-header
// timeout, since a tool call may take long before it answers.
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}

// BufferSize is the size of httputil.ReverseProxy's own copy buffer.
const BufferSize = 32 << 10

// BufferPool is an httputil.BufferPool: without one, the proxy allocates
// a 32 KiB buffer for every response it copies, which under load is most
// of the proxy's allocation and garbage-collection work. The pool holds
// array pointers, so Put does not allocate. Make one with NewBufferPool.
type BufferPool struct{ p sync.Pool }

// NewBufferPool returns an empty pool of BufferSize buffers.
func NewBufferPool() *BufferPool {
	return &BufferPool{p: sync.Pool{New: func() any { return new([BufferSize]byte) }}}
}

// Get returns a buffer of BufferSize bytes.
func (b *BufferPool) Get() []byte { return b.p.Get().(*[BufferSize]byte)[:] }

// Put returns buf to the pool; a buffer smaller than BufferSize is dropped.
func (b *BufferPool) Put(buf []byte) {
	if cap(buf) >= BufferSize {
		b.p.Put((*[BufferSize]byte)(buf[:BufferSize]))
	}
}

// FullDuplex lets next read the request body after it has begun the
// response. Without it, net/http's HTTP/1 server drains and closes the
// request body when the response header is written (golang.org/issue/15527),
// while the proxy's transport may still be reading it: having copied the
// declared length, it reads once more to check that the body ended there.
// When the upstream answered first, that read failed, the transport closed
// the upstream connection, and the answer on its way was cut
// (golang.org/issue/40747). A writer that cannot enable full duplex
// (HTTP/2 always is) keeps net/http's default.
//
// The body is closed before the handler returns. Under full duplex a body
// that next left unread (a refusal answers without reading it) would
// otherwise be drained by net/http after the handler: reaching its end
// then starts the connection's background read while the server already
// reads the next request, and the server panics ("invalid concurrent
// Body.Read call") and drops the connection. Closed here, the drain (at
// most net/http's post-handler limit) happens while the request is still
// the connection's, as it does without full duplex. The proxy closes the
// body it forwarded itself, so this is then a no-op.
func FullDuplex(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enableFullDuplex(w)
		if r.Body != nil {
			defer r.Body.Close()
		}
		next.ServeHTTP(w, r)
	})
}

// enableFullDuplex is http.NewResponseController(w).EnableFullDuplex()
// without the controller's allocation on every request: the first writer
// along w's Unwrap chain that can enable full duplex does.
func enableFullDuplex(w http.ResponseWriter) {
	for {
		switch t := w.(type) {
		case interface{ EnableFullDuplex() error }:
			_ = t.EnableFullDuplex()
			return
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return
		}
	}
}
