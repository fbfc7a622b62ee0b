package bridge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// JSON-RPC error codes the bridge answers with. -32700 and -32600 are
// JSON-RPC 2.0's own; the others are in the implementation-defined range
// and chosen away from the codes MCP assigns (-32002, -32020…-32022,
// -32042).
const (
	CodeParseError     = -32700 // the host sent a line that is not JSON
	CodeInvalidRequest = -32600 // the host sent JSON that is not one JSON-RPC message
	// CodeUnreachable: the request could not be sent or its answer was cut
	// off (connection refused or reset, server gone, stream ended early).
	// The next message tries again.
	CodeUnreachable = -32050
	// CodeAuthorization: no usable access token (authorization failed,
	// timed out or was refused); the message says what to do.
	CodeAuthorization = -32051
	// CodeBadResponse: the server's answer broke the transport rules (not
	// JSON-RPC, over the size limit, an unexpected status or redirect).
	CodeBadResponse = -32052
	// CodeShutdown: the bridge is exiting and cancelled the request.
	CodeShutdown = -32053
)

// message is the JSON-RPC envelope of one MCP message, decoded strictly
// (jsonx: case-sensitive names, no duplicates) so that the headers the
// bridge derives from it agree with what the server reads. ID, Params,
// Result and Error are the raw members, sub-slices of raw.
type message struct {
	JSONRPC string
	ID      json.RawMessage
	Method  string
	Params  json.RawMessage
	Result  json.RawMessage
	Error   json.RawMessage

	raw []byte // the message, on one line
}

// params holds the members of params the bridge mirrors into headers.
type params struct {
	Name string `json:"name"`
	URI  string `json:"uri"`
	Meta struct {
		ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	} `json:"_meta"`
}

var (
	errNotMessage = errors.New("not a JSON-RPC 2.0 message")
	errBatch      = errors.New("JSON-RPC batches are not supported")
)

// parseMessage decodes one JSON-RPC message and puts it on one line. It
// takes data over: the message's raw form and members are sub-slices of
// it, never copies (a message may be as large as Config.MaxMessageSize, and
// each copy would count against the bridge's memory), and its line breaks
// are replaced with spaces in place. Valid JSON has line breaks only
// between tokens, where a space means the same: a string holds them
// escaped.
func parseMessage(data []byte) (*message, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return nil, errBatch
	}
	var m message
	err := jsonx.Members(data, func(name string, v []byte) error {
		var err error
		switch name {
		case "jsonrpc":
			err = json.Unmarshal(v, &m.JSONRPC)
		case "id":
			m.ID = v
		case "method":
			err = json.Unmarshal(v, &m.Method)
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Error = v
		}
		if err != nil {
			return errNotMessage // valid JSON, members of the wrong type
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m.JSONRPC != "2.0" {
		return nil, errNotMessage
	}
	hasResult, hasError := m.Result != nil, m.Error != nil
	switch {
	case m.Method != "" && (hasResult || hasError):
		return nil, errNotMessage
	case m.Method == "" && (m.ID == nil || hasResult == hasError):
		return nil, errNotMessage
	}
	for _, lb := range []byte{'\n', '\r'} {
		for rest := data; ; {
			i := bytes.IndexByte(rest, lb)
			if i < 0 {
				break
			}
			rest[i] = ' '
			rest = rest[i+1:]
		}
	}
	m.raw = data
	if m.ID != nil {
		m.ID = compactID(m.ID)
	}
	return &m, nil
}

// compactID returns id without insignificant whitespace, the form used to
// match answers to requests.
func compactID(id json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		return id
	}
	return buf.Bytes()
}

func (m *message) isRequest() bool      { return m.Method != "" && m.ID != nil }
func (m *message) isNotification() bool { return m.Method != "" && m.ID == nil }
func (m *message) isResponse() bool     { return m.Method == "" }

// answers reports whether m is the response to the request with id.
func (m *message) answers(id json.RawMessage) bool {
	return m.isResponse() && bytes.Equal(m.ID, id)
}

// params decodes the members of params the headers mirror; a params
// member that is absent or not an object yields the zero value.
func (m *message) params() params {
	var p params
	if len(m.Params) > 0 && m.Params[0] == '{' {
		_ = jsonx.DecodeObject(m.Params, &p)
	}
	return p
}

// nameHeader returns the Mcp-Name value for the named methods of
// 2026-07-28 (TR-05): params.name for tools/call and prompts/get,
// params.uri for resources/read.
func (m *message) nameHeader(p params) (string, bool) {
	switch m.Method {
	case "tools/call", "prompts/get":
		return HeaderValue(p.Name), true
	case "resources/read":
		return HeaderValue(p.URI), true
	}
	return "", false
}

// Sentinels of the MCP header value encoding (SEP-2243).
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// HeaderValue encodes s for an MCP standard header (Mcp-Method, Mcp-Name,
// Mcp-Param-*): as is when it is printable ASCII without leading or
// trailing blanks, else (and when it could be mistaken for an encoded
// value) as =?base64?…?=.
func HeaderValue(s string) string {
	if s == "" {
		return s
	}
	plain := s[0] != ' ' && s[len(s)-1] != ' ' && // a tab is caught below
		!(strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix))
	if plain && !strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
		return s
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
}

// errorMessage builds the JSON-RPC error response for id (null when the
// request's id is unknown).
func errorMessage(id json.RawMessage, code int, text string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, text}})
	return out
}
