package resource

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// mcpMessage is what the policy needs from a JSON-RPC request body. Byte
// slices point into the body.
type mcpMessage struct {
	method    []byte // "method"; nil for a response
	hasMethod bool
	name      []byte // params.name (tools/call, prompts/get) or params.uri (resources/read)
	hasName   bool
	version   []byte // params._meta["io.modelcontextprotocol/protocolVersion"]
	// params._meta.traceparent and tracestate: the W3C trace context of
	// the request (SEP-414).
	traceparent, tracestate []byte

	rawName, rawURI []byte // as found, before the method is known

	// The values above are copies of the body's text (unescaped), in
	// text, whose storage is store until it grows out of it.
	text  []byte
	store [64]byte
}

// readBody reads r's body, at most maxBody bytes (Config.MaxBodyBytes); the wrapped handler's
// copy of the request replays it (see forward). A request without a body
// gives nil; one with an empty body, an empty non-nil slice.
func readBody(r *http.Request, maxBody int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > maxBody {
		return nil, errBodyTooLarge
	}
	var body []byte
	var err error
	if r.ContentLength > 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if int64(len(body)) > maxBody {
			return nil, errBodyTooLarge
		}
	}
	if err != nil {
		return nil, errMalformedBody
	}
	if body == nil {
		body = []byte{}
	}
	return body, nil
}

// replayBody gives the wrapped handler the bytes the middleware read.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

// namedMethods are the methods whose Mcp-Name header mirrors a body value.
func namedMethod(m []byte) bool {
	switch string(m) {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// checkHeaders compares the mirrored headers with the body: when Mcp-Method,
// Mcp-Name or MCP-Protocol-Version is present it must equal the body's value,
// after decoding the =?base64?…?= form. Absent headers are left to the MCP
// handler.
func checkHeaders(h http.Header, m *mcpMessage) error {
	if vals, ok := h["Mcp-Method"]; ok {
		if len(vals) != 1 || !m.hasMethod || !headerEquals(vals[0], m.method) {
			return errHeaderMismatch
		}
	}
	if vals, ok := h["Mcp-Name"]; ok && m.hasMethod && namedMethod(m.method) {
		if len(vals) != 1 || !m.hasName || !headerEquals(vals[0], m.name) {
			return errHeaderMismatch
		}
	}
	if vals, ok := h["Mcp-Protocol-Version"]; ok && m.version != nil {
		if len(vals) != 1 || vals[0] != string(m.version) {
			return errHeaderMismatch
		}
	}
	return nil
}

// headerEquals compares a header value, possibly in the MCP
// "=?base64?<value>?=" form, with a body value.
func headerEquals(hv string, body []byte) bool {
	if strings.HasPrefix(hv, "=?base64?") && strings.HasSuffix(hv, "?=") && len(hv) >= len("=?base64??=") {
		dec, err := base64.StdEncoding.DecodeString(hv[len("=?base64?") : len(hv)-2])
		return err == nil && bytes.Equal(dec, body)
	}
	return hv == string(body)
}

// bodyDecoder is a jsontext.Decoder with the buffer it reads, kept in
// bodyDecoders between requests so that the decoder's state and its
// stacks are reused.
type bodyDecoder struct {
	d   jsontext.Decoder
	buf bytes.Buffer
}

var bodyDecoders = sync.Pool{New: func() any { return new(bodyDecoder) }}

// scan validates that body is exactly one JSON object (a JSON array, a
// batch, is refused) and extracts into m, which must be zero, method,
// params.name/uri and the protocol version from params._meta; on an error
// m is zero again. It reads the body with a jsontext.Decoder (RFC 8259
// grammar, valid UTF-8 throughout) and refuses what could make it and the
// MCP handler read the body differently: a duplicate "method", "params",
// "name", "uri" or "_meta" member, and, since the SDK decodes with
// encoding/json v1, which matches member names without regard to case, a
// case variant of one. Duplicates elsewhere are the handler's to judge, as
// the policy does not read them.
func (m *mcpMessage) scan(body []byte) error {
	bd := bodyDecoders.Get().(*bodyDecoder)
	defer func() {
		// Keep neither the body nor the bytes read from it.
		bd.buf = bytes.Buffer{}
		bd.d.Reset(&bd.buf)
		bodyDecoders.Put(bd)
	}()
	// A bytes.Buffer is read in place, without a copy.
	bd.buf = *bytes.NewBuffer(body)
	d := &bd.d
	d.Reset(&bd.buf, jsontext.AllowDuplicateNames(true))
	if d.PeekKind() == '[' {
		return errBatch
	}
	if err := topObject(d, m); err != nil {
		*m = mcpMessage{}
		return errMalformedBody
	}
	if _, err := d.ReadToken(); err != io.EOF {
		*m = mcpMessage{}
		return errMalformedBody
	}
	switch {
	case !m.hasMethod || !namedMethod(m.method):
	case string(m.method) == "resources/read":
		m.name, m.hasName = m.rawURI, m.rawURI != nil
	default:
		m.name, m.hasName = m.rawName, m.rawName != nil
	}
	return nil
}

// members reads one object, calling read(i) for a member named names[i],
// positioned at its value; other members are skipped. A second
// occurrence, or a case variant, of one of names is an error. read must
// consume the value.
func members(d *jsontext.Decoder, names []string, read func(i int) error) error {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return errMalformedBody
	}
	seen := 0
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		name := []byte(raw[1 : len(raw)-1])
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return err
			}
		}
		i := slices.IndexFunc(names, func(n string) bool { return foldEq(name, n) })
		switch {
		case i < 0:
			err = d.SkipValue()
		case string(name) != names[i] || seen&(1<<i) != 0:
			return errMalformedBody
		default:
			seen |= 1 << i
			err = read(i)
		}
		if err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

// objectOrSkip reads an object value with read, or skips any other value.
func objectOrSkip(d *jsontext.Decoder, read func(*jsontext.Decoder, *mcpMessage) error, m *mcpMessage) error {
	if d.PeekKind() != '{' {
		return d.SkipValue()
	}
	return read(d, m)
}

func topObject(d *jsontext.Decoder, m *mcpMessage) error {
	return members(d, []string{"method", "params"}, func(i int) (err error) {
		if i == 1 {
			return objectOrSkip(d, params, m)
		}
		m.method, err = m.stringValue(d)
		m.hasMethod = err == nil
		return err
	})
}

// params reads the members of "params" the policy needs.
func params(d *jsontext.Decoder, m *mcpMessage) error {
	return members(d, []string{"name", "uri", "_meta"}, func(i int) error {
		switch i {
		case 0:
			return m.optString(d, &m.rawName)
		case 1:
			return m.optString(d, &m.rawURI)
		}
		return objectOrSkip(d, meta, m)
	})
}

// meta reads the protocol version and the W3C trace context of
// "params"."_meta".
func meta(d *jsontext.Decoder, m *mcpMessage) error {
	return members(d, metaNames, func(i int) error {
		switch i {
		case 1:
			return m.optString(d, &m.traceparent)
		case 2:
			return m.optString(d, &m.tracestate)
		}
		return m.optString(d, &m.version)
	})
}

var metaNames = []string{"io.modelcontextprotocol/protocolVersion", "traceparent", "tracestate"}

// optString reads a string value into *dst (a copy), or skips any other
// value.
func (m *mcpMessage) optString(d *jsontext.Decoder, dst *[]byte) error {
	if d.PeekKind() != '"' {
		return d.SkipValue()
	}
	v, err := m.stringValue(d)
	*dst = v
	return err
}

// stringValue reads a string value and returns a copy of its text, in
// m.text while it has room. The copies have no spare capacity, so an
// append to one never writes into the next.
func (m *mcpMessage) stringValue(d *jsontext.Decoder) ([]byte, error) {
	raw, err := d.ReadValue()
	if err != nil || raw.Kind() != '"' {
		return nil, errMalformedBody
	}
	if m.text == nil {
		m.text = m.store[:0]
	}
	start := len(m.text)
	m.text, err = jsontext.AppendUnquote(m.text, raw)
	if err != nil {
		return nil, err
	}
	return m.text[start:len(m.text):len(m.text)], nil
}

// foldEq reports whether key equals target (ASCII) under the case
// folding encoding/json v1 applies to member names: ASCII case, and
// U+017F and U+212A folding to "s" and "k".
func foldEq(key []byte, target string) bool {
	i := 0
	for t := 0; t < len(target); t++ {
		if i >= len(key) {
			return false
		}
		c, want := lower(key[i]), lower(target[t])
		switch {
		case c == want:
			i++
		case want == 's' && i+1 < len(key) && key[i] == 0xC5 && key[i+1] == 0xBF:
			i += 2
		case want == 'k' && i+2 < len(key) && key[i] == 0xE2 && key[i+1] == 0x84 && key[i+2] == 0xAA:
			i += 3
		default:
			return false
		}
	}
	return i == len(key)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
