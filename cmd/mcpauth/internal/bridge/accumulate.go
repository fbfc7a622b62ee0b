package bridge

import (
	"sync"
	"time"
)

// accumulator collects the bytes of one message as they are read and
// joins them once at the end. A slice grown by append holds the old and
// the new array while it grows (and leaves each old one as garbage); the
// chunks here are never reallocated, so a message of n bytes is held at
// most twice (the chunks, then the joined copy) while it is read, and once
// when it arrives in one piece or fits in a buffer from pool, which it
// borrows once it is past minPooled bytes.
type accumulator struct {
	chunks   [][]byte
	n        int
	pool     *bufPool // nil: none
	borrowed bool     // pool was asked
}

const (
	// maxChunk bounds the spare capacity of the last chunk.
	maxChunk = 1 << 20
	// minPooled is the size from which a message is read into a pooled
	// buffer, and the smallest buffer a bufPool keeps.
	minPooled = 64 << 10
	// pooledBuffers is the number of spare buffers a bufPool keeps: a call
	// with a large request and a large answer needs two at once.
	pooledBuffers = 2
)

// Write appends p; it never fails.
func (a *accumulator) Write(p []byte) (int, error) {
	n := len(p)
	if a.pool != nil && !a.borrowed && a.n+len(p) > minPooled {
		a.borrowed = true
		if buf := a.pool.get(-1); cap(buf) >= a.n+len(p) {
			for _, c := range a.chunks {
				buf = append(buf, c...)
			}
			a.chunks = [][]byte{buf}
		} else {
			a.pool.put(buf)
		}
	}
	if k := len(a.chunks); k > 0 {
		last := a.chunks[k-1]
		take := min(cap(last)-len(last), len(p))
		a.chunks[k-1] = append(last, p[:take]...)
		p = p[take:]
	}
	if len(p) > 0 {
		// The first chunk is p's size; later ones double the total so
		// far, up to maxChunk, and at least hold p.
		c := make([]byte, 0, max(len(p), min(a.n, maxChunk)))
		a.chunks = append(a.chunks, append(c, p...))
	}
	a.n += n
	return n, nil
}

// first returns the first chunk emptied, or nil: after a failure, the
// buffer borrowed from the pool (if it is one), to be given back.
func (a *accumulator) first() []byte {
	if len(a.chunks) == 0 {
		return nil
	}
	return a.chunks[0][:0]
}

// Len is the number of bytes written.
func (a *accumulator) Len() int { return a.n }

// Bytes returns everything written, as one slice: the first chunk itself
// when it holds everything, else a joined copy, in a spare of the pool's
// if one that fits has come back since the message began (the buffer of
// the message before, given back a moment late), else in a new buffer.
func (a *accumulator) Bytes() []byte {
	switch len(a.chunks) {
	case 0:
		return nil
	case 1:
		return a.chunks[0]
	}
	var out []byte
	if a.pool != nil && a.n >= minPooled {
		if out = a.pool.get(a.n); cap(out) < a.n {
			a.pool.put(out)
			out = nil
		}
	}
	if out == nil {
		out = make([]byte, 0, withHeadroom(a.n))
	}
	for _, c := range a.chunks {
		out = append(out, c...)
	}
	return out
}

// withHeadroom is the capacity of a new buffer for a message of n bytes:
// for a large one, a sixteenth more, so that the buffer still holds the
// next message when it is a little larger (the same answer framed as an
// event rather than as JSON, a request that carries it).
func withHeadroom(n int) int {
	if n < minPooled {
		return n
	}
	return n + n/16
}

// bufPool lends the buffers large messages are read into, so that large
// messages relayed one after another reuse the same buffers rather than
// each leaving its own to the garbage collector. It keeps at most
// pooledBuffers spares, and drops them once none has been given back for
// spareIdle, so that an idle bridge does not hold on to them. A buffer is
// given back once the message read into it has been relayed and nothing
// refers to it. The zero bufPool is empty and ready; a nil one lends
// nothing.
type bufPool struct {
	mu     sync.Mutex
	spares [pooledBuffers][]byte
	idle   *time.Timer // drops the spares; nil before the first put
	closed bool
}

// spareIdle is how long a bufPool keeps spares no one has used.
const spareIdle = 30 * time.Second

// get returns an empty buffer for a message of n bytes (n < 0: unknown):
// the smallest spare that holds n bytes, or else the largest spare; nil
// when there is none. A buffer that does not fit may be given back.
func (p *bufPool) get(n int) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best, bestCap := -1, 0
	for i, s := range p.spares {
		if s == nil {
			continue
		}
		c := cap(s)
		fits, bestFits := n >= 0 && c >= n, n >= 0 && bestCap >= n
		switch {
		case best < 0, fits && !bestFits, fits == bestFits && fits && c < bestCap, fits == bestFits && !fits && c > bestCap:
			best, bestCap = i, c
		}
	}
	if best < 0 {
		return nil
	}
	s := p.spares[best]
	p.spares[best] = nil
	return s[:0]
}

// put gives buf back, in place of an empty slot or of the smallest spare
// if that is smaller. A buffer under minPooled is not worth keeping.
func (p *bufPool) put(buf []byte) {
	if p == nil || cap(buf) < minPooled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	slot, slotCap := -1, cap(buf)
	for i, s := range p.spares {
		if s == nil {
			slot = i
			break
		}
		if cap(s) < slotCap {
			slot, slotCap = i, cap(s)
		}
	}
	if slot >= 0 {
		p.spares[slot] = buf[:0]
	}
	if p.idle == nil {
		p.idle = time.AfterFunc(spareIdle, p.drop)
	} else {
		p.idle.Reset(spareIdle)
	}
}

// drop lets go of the spares.
func (p *bufPool) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.spares[:])
}

// close drops the spares and stops the idle timer; later buffers given
// back are dropped.
func (p *bufPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.idle != nil {
		p.idle.Stop()
	}
	clear(p.spares[:])
}
