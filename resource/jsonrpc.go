package resource

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// mcpMessage is what the policy needs from a JSON-RPC request body. Byte
// slices point into the body.
type mcpMessage struct {
	method    []byte // "method"; nil for a response
	hasMethod bool
	name      []byte // params.name (tools/call, prompts/get) or params.uri (resources/read)
	hasName   bool
	version   []byte // params._meta["io.modelcontextprotocol/protocolVersion"]

	rawName, rawURI []byte // as found, before the method is known
}

// readMessage reads the body (at most MaxBodyBytes), puts it back for the
// wrapped handler, and scans it.
func (v *Verifier) readMessage(r *http.Request) (mcpMessage, error) {
	body, err := v.readBody(r)
	if err != nil {
		return mcpMessage{}, err
	}
	return scanMessage(body)
}

func (v *Verifier) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > v.maxBody {
		return nil, ErrBodyTooLarge
	}
	var body []byte
	var err error
	if r.ContentLength > 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, v.maxBody+1))
		if int64(len(body)) > v.maxBody {
			return nil, ErrBodyTooLarge
		}
	}
	if err != nil {
		return nil, ErrMalformedBody
	}
	rb := &replayBody{}
	rb.Reset(body)
	r.Body = rb
	return body, nil
}

// replayBody gives the wrapped handler the bytes the middleware read.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

// namedMethods are the methods whose Mcp-Name header mirrors a body value
// (TR-05).
func namedMethod(m []byte) bool {
	switch string(m) {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

// checkHeaders compares the mirrored headers with the body (TR-04, TR-05,
// RS-15): when Mcp-Method, Mcp-Name or MCP-Protocol-Version is present it
// must equal the body's value, after decoding the =?base64?…?= form.
// Absent headers are left to the MCP handler.
func checkHeaders(h http.Header, m *mcpMessage) error {
	if vals, ok := h["Mcp-Method"]; ok {
		if len(vals) != 1 || !m.hasMethod || !headerEquals(vals[0], m.method) {
			return ErrHeaderMismatch
		}
	}
	if vals, ok := h["Mcp-Name"]; ok && m.hasMethod && namedMethod(m.method) {
		if len(vals) != 1 || !m.hasName || !headerEquals(vals[0], m.name) {
			return ErrHeaderMismatch
		}
	}
	if vals, ok := h["Mcp-Protocol-Version"]; ok && m.version != nil {
		if len(vals) != 1 || vals[0] != string(m.version) {
			return ErrHeaderMismatch
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

// Limits of the body scanner.
const maxJSONDepth = 128

var errScan = errors.New("scan")

// scanMessage validates that body is exactly one JSON object (a JSON
// array, a batch, is refused) and extracts method, params.name/uri and the
// protocol version from params._meta. It accepts exactly the JSON grammar
// of RFC 8259 and refuses what could make it and the MCP handler read the
// body differently: a duplicate or case-variant "method", "params",
// "name", "uri" or "_meta" member, and invalid UTF-8 in the values it
// extracts.
func scanMessage(body []byte) (mcpMessage, error) {
	s := scanner{data: body}
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '[' {
		return mcpMessage{}, ErrBatch
	}
	var m mcpMessage
	if err := s.topObject(&m); err != nil {
		return mcpMessage{}, ErrMalformedBody
	}
	s.ws()
	if s.pos != len(s.data) {
		return mcpMessage{}, ErrMalformedBody
	}
	switch {
	case !m.hasMethod || !namedMethod(m.method):
	case string(m.method) == "resources/read":
		m.name, m.hasName = m.rawURI, m.rawURI != nil
	default:
		m.name, m.hasName = m.rawName, m.rawName != nil
	}
	return m, nil
}

type scanner struct {
	data  []byte
	pos   int
	depth int
	buf   []byte
	// strict refuses duplicate member names in every object and invalid
	// UTF-8 in every string, as internal/jsonx does.
	strict bool
	// text, when set, is string(data), so unescaped string values can be
	// returned as substrings without allocating.
	text string
}

func (s *scanner) topObject(m *mcpMessage) error {
	var paramsSeen bool
	return s.object(func(key []byte) error {
		switch {
		case string(key) == "method":
			if m.hasMethod {
				return errScan
			}
			v, err := s.captureString()
			m.method, m.hasMethod = v, true
			return err
		case string(key) == "params":
			if paramsSeen {
				return errScan
			}
			paramsSeen = true
			if s.peek() == '{' {
				return s.params(m)
			}
			return s.value()
		case foldEq(key, "method"), foldEq(key, "params"):
			return errScan
		}
		return s.value()
	})
}

func (s *scanner) params(m *mcpMessage) error {
	var nameSeen, uriSeen, metaSeen bool
	return s.object(func(key []byte) error {
		switch {
		case string(key) == "name":
			if nameSeen {
				return errScan
			}
			nameSeen = true
			return s.optString(&m.rawName)
		case string(key) == "uri":
			if uriSeen {
				return errScan
			}
			uriSeen = true
			return s.optString(&m.rawURI)
		case string(key) == "_meta":
			if metaSeen {
				return errScan
			}
			metaSeen = true
			if s.peek() == '{' {
				return s.meta(m)
			}
			return s.value()
		case foldEq(key, "name"), foldEq(key, "uri"), foldEq(key, "_meta"):
			return errScan
		}
		return s.value()
	})
}

func (s *scanner) meta(m *mcpMessage) error {
	const key = "io.modelcontextprotocol/protocolVersion"
	seen := false
	return s.object(func(k []byte) error {
		if string(k) == key {
			if seen {
				return errScan
			}
			seen = true
			return s.optString(&m.version)
		}
		if foldEq(k, key) {
			return errScan
		}
		return s.value()
	})
}

// optString captures a string value into *dst, or skips any other value.
func (s *scanner) optString(dst *[]byte) error {
	if s.peek() != '"' {
		return s.value()
	}
	v, err := s.captureString()
	*dst = v
	return err
}

func (s *scanner) captureString() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errScan
	}
	v, err := s.str(true)
	if err != nil || !utf8.Valid(v) {
		return nil, errScan
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}
