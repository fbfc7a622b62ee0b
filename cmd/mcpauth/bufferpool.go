package main

import "sync"

// proxyBufferSize is the size of httputil.ReverseProxy's own copy buffer.
const proxyBufferSize = 32 << 10

// bufferPool is the reverse proxy's httputil.BufferPool: without one, the
// proxy allocates a 32 KiB buffer for every response it copies, which
// under load is most of the proxy's allocation and garbage-collection
// work. The pool holds array pointers, so Put does not allocate.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{p: sync.Pool{New: func() any { return new([proxyBufferSize]byte) }}}
}

func (b *bufferPool) Get() []byte { return b.p.Get().(*[proxyBufferSize]byte)[:] }

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) >= proxyBufferSize {
		b.p.Put((*[proxyBufferSize]byte)(buf[:proxyBufferSize]))
	}
}
