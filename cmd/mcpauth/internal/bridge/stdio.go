package bridge

import (
	"bufio"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// hostReader reads the host's newline-delimited messages; a large one
// goes into a buffer from pool, which the caller gives back once the
// message is done with.
type hostReader struct {
	r    *bufio.Reader
	max  int
	pool *bufPool
}

// next returns the next non-empty line. A line over the limit is read to
// its end and discarded, and reported as errTooLarge so that the host gets
// an error and the next line is read normally.
func (h *hostReader) next() ([]byte, error) {
	for {
		line, err := readLine(h.r, h.max, true, h.pool)
		if errors.Is(err, errTooLarge) {
			h.pool.put(line)
			return nil, err
		}
		if len(line) > 0 {
			return line, nil // a last line without LF counts too
		}
		if err != nil {
			return nil, err
		}
	}
}

// hostWriter writes messages to the host, one per line, whole.
type hostWriter struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	broken chan struct{} // closed at the first write error

	pending  atomic.Int64  // writes begun and not yet returned
	finished atomic.Uint64 // writes returned
}

func newHostWriter(w io.Writer) *hostWriter {
	return &hostWriter{w: w, broken: make(chan struct{})}
}

// write sends one JSON-RPC message on one line (no line break inside)
// followed by a newline: two writes under the lock, so that a large
// message is not copied to append the newline. After a failed write (the
// host went away) it does nothing.
func (h *hostWriter) write(msg []byte) error {
	h.pending.Add(1)
	defer func() { h.pending.Add(-1); h.finished.Add(1) }()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	if _, err := h.w.Write(msg); err != nil {
		h.err = err
	} else if _, err := h.w.Write(newline); err != nil {
		h.err = err
	}
	if h.err != nil {
		close(h.broken)
	}
	return h.err
}

var newline = []byte{'\n'}

// stalled reports whether writes are waiting on the host and none has
// returned since finished read before (a host that stopped reading stdout).
func (h *hostWriter) stalled(before uint64) bool {
	return h.pending.Load() > 0 && h.finished.Load() == before
}
