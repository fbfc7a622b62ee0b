// Package revproxy holds the pieces of mcpauth's reverse proxy to an
// upstream that do not depend on what sits in front of it: the server
// that accepts its clients, the upstream transport and the copy-buffer
// pool. `mcpauth protect` uses them, and so
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
