package resource

import (
	"strings"
	"testing"
)

// TestAllowedRequestHeaders: a preflight's requested names are echoed
// only when every one is an RFC 9110 token; a name with a space, a
// separator, a control character, a non-ASCII or invalid UTF-8 byte, an
// empty element or an oversized list gives the MCP set alone.
func TestAllowedRequestHeaders(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"mcp-param-tenant", "X-A, x-b ,x_c", "!#$%&'*+-.^_`|~09AZaz"} {
		if got := allowedRequestHeaders(ok); got != mcpRequestHeaders+", "+ok {
			t.Errorf("%q: %q", ok, got)
		}
	}
	for _, bad := range []string{"", "a b", "a:b", "a,,b", "a,", "x-\u00e9", "x-\xff", "\xc3", "a\tb", "a\r\nb", "a\x00",
		`a"b`, "a(b)", "a/b", strings.Repeat("a", 1025)} {
		if got := allowedRequestHeaders(bad); got != mcpRequestHeaders {
			t.Errorf("%q: %q", bad, got)
		}
	}
}
