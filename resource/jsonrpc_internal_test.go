package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanMessage is [mcpMessage.scan] into a new message.
func scanMessage(body []byte) (mcpMessage, error) {
	var m mcpMessage
	err := m.scan(body)
	return m, err
}

func TestScanMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		body               string
		method, name2, ver string
		err                error
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":"c"}]}}}`, "tools/call", "x", "", nil},
		{"resources/read", `{"method":"resources/read","params":{"uri":"file:///a","name":"ignored"}}`, "resources/read", "file:///a", "", nil},
		{"prompts/get", ` {"params":{"name":"p"},"method":"prompts/get"} `, "prompts/get", "p", "", nil},
		{"name ignored for other methods", `{"method":"tools/list","params":{"name":"x"}}`, "tools/list", "", "", nil},
		{"protocol version", `{"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/list", "", "2026-07-28", nil},
		{"escapes", `{"method":"tools\/call","params":{"name":"a\"b\\c\u00e9\ud83d\ude00\n"}}`, "tools/call", "a\"b\\cé😀\n", "", nil},
		{"numbers", `{"a":-0.5e+10,"b":0,"c":1E3,"method":"m"}`, "m", "", "", nil},
		{"batch", `[{"method":"tools/call"}]`, "", "", "", ErrBatch},
		{"empty", ``, "", "", "", ErrMalformedBody},
		{"not an object", `"x"`, "", "", "", ErrMalformedBody},
		{"leading zero", `{"a":01}`, "", "", "", ErrMalformedBody},
		{"bare minus", `{"a":-}`, "", "", "", ErrMalformedBody},
		{"trailing comma", `{"a":1,}`, "", "", "", ErrMalformedBody},
		{"control character", "{\"a\":\"\x01\"}", "", "", "", ErrMalformedBody},
		{"bad escape", `{"a":"\x"}`, "", "", "", ErrMalformedBody},
		{"method not a string", `{"method":1}`, "", "", "", ErrMalformedBody},
		{"single quotes", `{'a':1}`, "", "", "", ErrMalformedBody},
		{"deep nesting", string(make([]byte, 0)) + deep(200), "", "", "", ErrMalformedBody},
		{"Kelvin fold", "{\"method\":\"a\",\"params\":{\"name\":\"x\",\"NAME\":\"y\"}}", "", "", "", ErrMalformedBody},
		{"duplicate method", `{"method":"tools/list","method":"tools/call"}`, "", "", "", ErrMalformedBody},
		{"escaped duplicate name", `{"method":"tools/call","params":{"name":"a","n\u0061me":"b"}}`, "", "", "", ErrMalformedBody},
		{"version case variant", `{"method":"m","params":{"_meta":{"io.modelcontextprotocol/protocolversion":"x"}}}`, "", "", "", ErrMalformedBody},
		{"duplicates the policy does not read", `{"method":"m","params":{"arguments":{"a":1,"a":2}}}`, "m", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := scanMessage([]byte(tt.body))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.method) != tt.method || string(m.name) != tt.name2 || string(m.version) != tt.ver {
				t.Errorf("got method %q name %q version %q", m.method, m.name, m.version)
			}
		})
	}
}

func deep(n int) string {
	s := `{"a":`
	for i := 0; i < n; i++ {
		s += "["
	}
	return s
}

func TestFoldEq(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		key, target string
		eq          bool
	}{
		{"method", "method", true}, {"METHOD", "method", true}, {"Method", "method", true},
		{"param\u017f", "params", true}, {"\u212aey", "key", true}, {"methods", "method", false},
		{"metho", "method", false}, {"m\u00e9thod", "method", false},
		{"io.modelcontextprotocol/protocolversion", "io.modelcontextprotocol/protocolVersion", true},
	} {
		if got := foldEq([]byte(tt.key), tt.target); got != tt.eq {
			t.Errorf("foldEq(%q, %q) = %v", tt.key, tt.target, got)
		}
	}
}

func TestCheckHeaders(t *testing.T) {
	t.Parallel()
	m, _ := scanMessage([]byte(`{"method":"tools/call","params":{"name":"x y"}}`))
	for _, tt := range []struct {
		h  http.Header
		ok bool
	}{
		{http.Header{}, true},
		{http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"x y"}}, true},
		{http.Header{"Mcp-Name": {"=?base64?eCB5?="}}, true},
		{http.Header{"Mcp-Name": {"=?base64?!!?="}}, false},
		{http.Header{"Mcp-Name": {"x", "x y"}}, false},
		{http.Header{"Mcp-Method": {"tools/list"}}, false},
	} {
		if err := checkHeaders(tt.h, &m); (err == nil) != tt.ok {
			t.Errorf("%v: %v", tt.h, err)
		}
	}
}

// FuzzScanMessage checks the scanner never panics and, whenever it accepts
// a body, agrees with encoding/json (case-sensitively) about the method and
// the name the policy decides on.
func FuzzScanMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{}}}`,
		`{"method":"resources/read","params":{"uri":"file:///secret"}}`,
		`{"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"method":"x"}]`, `{"method":"\u0074ools/call"}`, `{"a":[1,2.5e3,true,null,{"b":"\ud83d\ude00"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := scanMessage(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatalf("accepted a non-object %q", body)
		}
		var method string
		if mv, ok := raw["method"]; ok {
			if err := json.Unmarshal(mv, &method); err != nil || !m.hasMethod || method != string(m.method) {
				t.Fatalf("method: scanner %q, encoding/json %q (%v)", m.method, method, err)
			}
		} else if m.hasMethod {
			t.Fatalf("scanner found a method encoding/json did not")
		}
		if m.hasName && !utf8.Valid(m.name) {
			t.Fatalf("invalid UTF-8 name accepted")
		}
	})
}

// TestScanMessageReusesNothing: the values scanMessage returns are copies
// that share no storage with the body or each other, and a scan is not
// affected by the one before it (the decoders are pooled), whether that one
// failed half-way or not.
func TestScanMessageReusesNothing(t *testing.T) {
	t.Parallel()
	body := []byte(`{"method":"tools/call","params":{"name":"write_file","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	for _, before := range []string{``, `[{"method":"x"}]`, `{"method":"tools/call","params":{"name":`, `{"params":{"_meta":{"x":{`, `{"method":"a","method":"b"}`} {
		scanMessage([]byte(before))
		b := bytes.Clone(body)
		m, err := scanMessage(b)
		if err != nil {
			t.Fatalf("after %q: %v", before, err)
		}
		clear(b)
		_ = append(m.method, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
		_ = append(m.name, "YYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY"...)
		if string(m.method) != "tools/call" || string(m.name) != "write_file" || string(m.version) != "2026-07-28" {
			t.Fatalf("after %q: got %q %q %q", before, m.method, m.name, m.version)
		}
	}
	// Values longer than the message's own storage.
	long := strings.Repeat("n", 100)
	m, err := scanMessage([]byte(`{"method":"tools/call","params":{"name":"` + long + `","_meta":{"io.modelcontextprotocol/protocolVersion":"` + long + `"}}}`))
	if err != nil || string(m.method) != "tools/call" || string(m.name) != long || string(m.version) != long {
		t.Fatalf("long: %q %q %q, %v", m.method, m.name, m.version, err)
	}
}
