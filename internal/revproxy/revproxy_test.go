package revproxy

import (
	"net/http/httputil"
	"testing"
)

var _ httputil.BufferPool = (*BufferPool)(nil)

// TestBufferPool: buffers are BufferSize long, a buffer given back is
// whole again, and a short buffer is not taken in.
func TestBufferPool(t *testing.T) {
	t.Parallel()
	p := NewBufferPool()
	b := p.Get()
	if len(b) != BufferSize {
		t.Fatalf("len %d", len(b))
	}
	p.Put(b[:100])
	p.Put(make([]byte, 10)) // dropped, not a panic
	for range 3 {
		if b := p.Get(); len(b) != BufferSize {
			t.Fatalf("len %d after Put", len(b))
		}
	}
}

// TestTransport: no environment proxy, and connections kept for reuse.
func TestTransport(t *testing.T) {
	t.Parallel()
	tr := Transport()
	if tr.Proxy != nil || tr.MaxIdleConnsPerHost < 8 || tr.ResponseHeaderTimeout != 0 || tr.DialContext == nil {
		t.Errorf("transport %+v", tr)
	}
}

// TestServer: header reads are bounded in time and size and idle
// connections closed, while a request or a response may stream for as
// long as it lasts.
func TestServer(t *testing.T) {
	t.Parallel()
	s := Server(nil)
	if s.ReadHeaderTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 || s.MaxHeaderBytes > 1<<20 {
		t.Errorf("unbounded: ReadHeaderTimeout %v, IdleTimeout %v, MaxHeaderBytes %d", s.ReadHeaderTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("event streams would be cut: ReadTimeout %v, WriteTimeout %v", s.ReadTimeout, s.WriteTimeout)
	}
}
