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
// bridge derives from it agree with what the server reads.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitzero"`
	Method  string          `json:"method,omitzero"`
	Params  json.RawMessage `json:"params,omitzero"`
	Result  json.RawMessage `json:"result,omitzero"`
	Error   json.RawMessage `json:"error,omitzero"`

	raw []byte // the message, compacted to one line
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

// parseMessage decodes one JSON-RPC message and compacts it to one line.
func parseMessage(data []byte) (*message, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return nil, errBatch
	}
	var m message
	if err := jsonx.DecodeObject(data, &m); err != nil {
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
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := json.Compact(&buf, data); err != nil {
		return nil, errNotMessage
	}
	m.raw = buf.Bytes()
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
