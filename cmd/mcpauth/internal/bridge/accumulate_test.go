package bridge

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestAccumulator(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 100, minPooled, minPooled + 1, 3*maxChunk + 7} {
		want := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		var a accumulator
		for rest := want; len(rest) > 0; {
			k := min(len(rest), 32<<10)
			_, _ = a.Write(rest[:k])
			rest = rest[k:]
		}
		if got := a.Bytes(); !bytes.Equal(got, want) || a.Len() != n {
			t.Errorf("%d bytes: got %d (Len %d)", n, len(got), a.Len())
		}
	}
}

// TestAccumulatorBorrows: a message past minPooled is read into a spare
// buffer that holds it, with no copy at the end; one that does not fit
// leaves the spare in the pool.
func TestAccumulatorBorrows(t *testing.T) {
	t.Parallel()
	p := &bufPool{}
	defer p.close()
	spare := make([]byte, 0, 1<<20)
	p.put(spare)
	msg := bytes.Repeat([]byte("x"), 600<<10)
	a := accumulator{pool: p}
	for rest := msg; len(rest) > 0; rest = rest[min(len(rest), 32<<10):] {
		_, _ = a.Write(rest[:min(len(rest), 32<<10)])
	}
	got := a.Bytes()
	if !bytes.Equal(got, msg) || &got[:1][0] != &spare[:1][0] {
		t.Fatal("the message was not read into the spare buffer")
	}
	if p.get(-1) != nil {
		t.Error("the borrowed buffer is still in the pool")
	}
	p.put(got)
	big := accumulator{pool: p}
	_, _ = big.Write(make([]byte, 2<<20))
	if b := p.get(-1); cap(b) != cap(spare) {
		t.Errorf("a spare too small for the message: pool holds %d bytes, want it kept", cap(b))
	}
}

func TestBufPool(t *testing.T) {
	t.Parallel()
	p := &bufPool{}
	defer p.close()
	mk := func(n int) []byte { return make([]byte, 5, n) }
	p.put(mk(minPooled - 1)) // too small to keep
	if b := p.get(-1); b != nil {
		t.Fatalf("kept a buffer of %d bytes", cap(b))
	}
	p.put(mk(100 << 10))
	p.put(mk(300 << 10))
	p.put(mk(200 << 10)) // replaces the smallest
	p.put(mk(150 << 10)) // smaller than both: dropped
	for _, tc := range []struct{ n, want int }{
		{150 << 10, 200 << 10}, // the smallest that fits
		{400 << 10, 300 << 10}, // none fits: the largest
		{0, 0},                 // empty
	} {
		b := p.get(tc.n)
		if cap(b) != tc.want || len(b) != 0 {
			t.Errorf("get(%d) = %d bytes of capacity (len %d), want %d", tc.n, cap(b), len(b), tc.want)
		}
	}
	var nilPool *bufPool
	nilPool.put(mk(1 << 20))
	if nilPool.get(-1) != nil {
		t.Error("a nil pool lent a buffer")
	}
	p.put(mk(1 << 20))
	p.close()
	p.put(mk(1 << 20))
	if b := p.get(-1); b != nil {
		t.Error("a closed pool lent a buffer")
	}
}

// TestSSEReaderReusesBuffer: the large events of two streams in a row are
// read into the same buffer, given back by release, and the data of a
// single-line event is that buffer itself.
func TestSSEReaderReusesBuffer(t *testing.T) {
	t.Parallel()
	p := &bufPool{}
	defer p.close()
	var first *byte
	for i, body := range []string{strings.Repeat("a", 300<<10), strings.Repeat("b", 200<<10)} {
		r := newSSEReader(strings.NewReader("event: message\ndata: "+body+"\n\n"), 1<<20, p)
		ev, err := r.next()
		if err != nil || string(ev.data) != body {
			t.Fatalf("stream %d: %v, %d bytes", i, err, len(ev.data))
		}
		if i == 0 {
			first = &ev.data[0]
		} else if &ev.data[0] != first {
			t.Error("the second stream's event is in a new buffer")
		}
		if _, err := r.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("stream %d: %v after the event, want EOF", i, err)
		}
		r.release()
	}
}

// TestParseMessageInPlace: a message is put on one line in place, its
// members are sub-slices of it, and what is not one JSON-RPC message is
// refused with the error the host's code depends on.
func TestParseMessageInPlace(t *testing.T) {
	t.Parallel()
	data := []byte("\r\n {\"jsonrpc\":\"2.0\",\r\n\"id\" : 7,\n\t\"result\":{\"text\":\"a\\nb\"}}\n")
	m, err := parseMessage(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0",  "id" : 7, ` + "\t" + `"result":{"text":"a\nb"}}`; string(m.raw) != want {
		t.Errorf("raw %q, want %q", m.raw, want)
	}
	if string(m.ID) != "7" || string(m.Result) != `{"text":"a\nb"}` || !m.isResponse() {
		t.Errorf("message %+v", m)
	}
	if &m.Result[0] != &data[bytes.IndexByte(data, '{')+len(`{"jsonrpc":"2.0",`)+len("\r\n\"id\" : 7,\n\t\"result\":")] {
		t.Error("result is a copy")
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`{"jsonrpc":"2.0","id":1,"method":5}`, errNotMessage},
		{`{"jsonrpc":2,"id":1,"method":"ping"}`, errNotMessage},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","method":"x"}`, nil}, // a syntax error: not errNotMessage
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, nil},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, errBatch},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, errNotMessage},
	} {
		_, err := parseMessage([]byte(tc.in))
		switch {
		case err == nil:
			t.Errorf("%s: accepted", tc.in)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.in, err, tc.want)
		case tc.want == nil && (errors.Is(err, errNotMessage) || errors.Is(err, errBatch)):
			t.Errorf("%s: %v, want a syntax error", tc.in, err)
		}
	}
}
