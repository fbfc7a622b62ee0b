package bridge

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// Bounds of the x-mcp-header table (SEP-2243): it is filled from the
// server's tools/list answers, so a server cannot make it grow without
// limit.
const (
	maxHeaderTools    = 4096
	maxHeaderBindings = 32 // per tool
	maxSchemaDepth    = 8
)

// paramBinding maps a (possibly nested) tool argument to the header
// Mcp-Param-{Header} that mirrors it.
type paramBinding struct {
	path   []string
	header string
}

// schemaNode holds what the bridge reads of a tool's input schema.
type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
	XMCPHeader json.RawMessage       `json:"x-mcp-header"`
}

// learnTools records the x-mcp-header bindings of the tools in a
// tools/list result.
func (b *Bridge) learnTools(result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name        string     `json:"name"`
			InputSchema schemaNode `json:"inputSchema"`
		} `json:"tools"`
	}
	if decodeParams(result, &r) != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paramHeaders == nil {
		b.paramHeaders = make(map[string][]paramBinding)
	}
	for _, t := range r.Tools {
		bindings := collectBindings(t.InputSchema.Properties, nil, nil, 0)
		_, known := b.paramHeaders[t.Name]
		switch {
		case len(bindings) == 0:
			delete(b.paramHeaders, t.Name)
		case known || len(b.paramHeaders) < maxHeaderTools:
			b.paramHeaders[t.Name] = bindings
		}
	}
}

func collectBindings(props map[string]schemaNode, prefix []string, out []paramBinding, depth int) []paramBinding {
	if depth >= maxSchemaDepth {
		return out
	}
	for name, p := range props {
		if len(out) >= maxHeaderBindings {
			return out
		}
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil && len(header) <= 64 && ValidHeaderName(header) {
			out = append(out, paramBinding{path: path, header: header})
		}
		out = collectBindings(p.Properties, path, out, depth+1)
	}
	return out
}

// paramHeaderValues returns the Mcp-Param-* headers of a tools/call
// (SEP-2243): each bound argument that is a string, a boolean or an
// integer within ±(2^53-1), encoded like the other MCP headers.
func (b *Bridge) paramHeaderValues(tool string, params json.RawMessage) map[string]string {
	b.mu.Lock()
	bindings := b.paramHeaders[tool]
	b.mu.Unlock()
	if len(bindings) == 0 {
		return nil
	}
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if decodeParams(params, &p) != nil {
		return nil
	}
	out := make(map[string]string, len(bindings))
	for _, bd := range bindings {
		raw, ok := lookupArgument(p.Arguments, bd.path)
		if !ok {
			continue
		}
		if v, ok := primitiveHeader(raw); ok {
			out["Mcp-Param-"+bd.header] = v
		}
	}
	return out
}

func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if decodeParams(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	return cur, ok
}

// primitiveHeader formats a string, boolean or safe integer argument.
func primitiveHeader(raw json.RawMessage) (string, bool) {
	var v any
	if jsonx.DecodeObject([]byte(`{"v":`+string(raw)+`}`), &struct {
		V *any `json:"v"`
	}{&v}) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return HeaderValue(v), true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		const maxSafe = 1<<53 - 1
		if v != math.Trunc(v) || v > maxSafe || v < -maxSafe {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

// ValidHeaderName reports whether s is a header field name: an RFC 9110
// token.
func ValidHeaderName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c))
	})
}
