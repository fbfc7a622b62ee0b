package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzSSEReader: any stream yields events whose data stays within the
// limit, then an error; it never panics or loops.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		"event: message\nid: 1\ndata: a\ndata: b\n\n",
		": comment\r\ndata:x\r\n\r\n",
		"data: " + strings.Repeat("y", 100),
		"retry: 10\nevent: ping\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 64
		r := newSSEReader(bytes.NewReader(data), max, nil)
		for range len(data) + 2 {
			ev, err := r.next()
			if err != nil {
				return
			}
			if len(ev.data) > max {
				t.Fatalf("event of %d bytes over the limit %d", len(ev.data), max)
			}
		}
		t.Fatal("more events than input bytes")
	})
}

// FuzzParseMessage: what parseMessage accepts is one JSON object with
// jsonrpc 2.0, compacted to one line, and exactly one of request,
// notification or response.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`,
		`[{"jsonrpc":"2.0"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"a","METHOD":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMessage(data)
		if err != nil {
			return
		}
		if bytes.ContainsAny(m.raw, "\n\r") || !json.Valid(m.raw) {
			t.Fatalf("raw %q is not one line of JSON", m.raw)
		}
		kinds := 0
		for _, k := range []bool{m.isRequest(), m.isNotification(), m.isResponse()} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("%q is %d kinds of message", data, kinds)
		}
		_ = m.params()
	})
}

// FuzzHostReader: host lines over the limit are reported and skipped, the
// rest come back whole.
func FuzzHostReader(f *testing.F) {
	f.Add([]byte("a\nbb\n" + strings.Repeat("c", 40) + "\nd"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &hostReader{r: newSSEReader(bytes.NewReader(data), 16, nil).r, max: 16}
		for range len(data) + 2 {
			line, err := h.next()
			switch {
			case errors.Is(err, errTooLarge):
			case err != nil:
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				return
			case len(line) > 16:
				t.Fatalf("line of %d bytes", len(line))
			}
		}
		t.Fatal("more lines than input bytes")
	})
}
