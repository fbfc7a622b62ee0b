package resource_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// issuePolicy is the policy JSON of the specification of this package.
const issuePolicy = `{"default": ["mcp:tools"],
 "methods": {"tools/list": ["mcp:read"]},
 "tools": {"write_file": ["files:write"], "delete_file": ["files:admin"]},
 "resources": {"file:///secret": ["files:admin"]},
 "prompts": {"deploy": ["ops:deploy"]},
 "implies": {"admin": ["files:write", "files:read", "mcp:tools"], "files:admin": ["files:write"]}}`

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	p, err := resource.ParsePolicy([]byte(issuePolicy))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tools) != 2 || p.Implies["admin"][0] != "files:write" {
		t.Errorf("policy = %+v", p)
	}
	bad := []struct{ name, json string }{
		{"duplicate member", `{"default":["a"],"default":["b"]}`},
		{"misspelt member", `{"tool":{"write_file":["files:write"]}}`},
		{"case-variant member", `{"Tools":{"write_file":["files:write"]}}`},
		{"RS-23 offline_access", `{"default":["offline_access"]}`},
		{"invalid scope token", `{"tools":{"x":["a b"]}}`},
		{"empty tool name", `{"tools":{"":["a"]}}`},
		{"not an object", `["a"]`},
		{"scope list of numbers", `{"default":[1]}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := resource.ParsePolicy([]byte(tt.json)); !errors.Is(err, resource.ErrInvalidConfig) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func rpc(method, params string) string {
	return `{"jsonrpc":"2.0","id":3,"method":"` + method + `","params":` + params + `}`
}

// TestPolicyDecisions covers RS-12…RS-15, TR-04 and TR-05: scopes per
// method, tool, resource and prompt, implied scopes, header checks against
// the parsed body, and bodies the policy refuses to guess about.
func TestPolicyDecisions(t *testing.T) {
	t.Parallel()
	policy, err := resource.ParsePolicy([]byte(issuePolicy))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *resource.Config) { c.Policy = policy; c.MaxBodyBytes = 4096 })
	tests := []struct {
		name    string
		scope   string
		body    string
		headers map[string]string
		status  int
		want    string // challenge scope for 403, JSON-RPC code for 400
	}{
		{"RS-12 method rule", "mcp:tools", rpc("tools/list", "{}"), nil, 403, "mcp:tools mcp:read"},
		{"method rule satisfied", "mcp:tools mcp:read", rpc("tools/list", "{}"), nil, 200, ""},
		{"RS-12 tool rule", "mcp:tools files:read", toolCall("write_file"), nil, 403, "mcp:tools files:write"},
		{"RS-13 admin implies files:write and mcp:tools", "admin", toolCall("write_file"), nil, 200, ""},
		{"RS-13 implications are transitive", "files:admin mcp:tools", toolCall("write_file"), nil, 200, ""},
		{"RS-13 implication does not go backwards", "files:write mcp:tools", toolCall("delete_file"), nil, 403, "mcp:tools files:admin"},
		{"tool without a rule needs the default", "mcp:tools", toolCall("read_file"), nil, 200, ""},
		{"default rule applies to tools too", "files:write", toolCall("write_file"), nil, 403, "mcp:tools files:write"},
		{"RS-12 resource rule", "mcp:tools", rpc("resources/read", `{"uri":"file:///secret"}`), nil, 403, "mcp:tools files:admin"},
		{"other resource", "mcp:tools", rpc("resources/read", `{"uri":"file:///public"}`), nil, 200, ""},
		{"RS-12 prompt rule", "mcp:tools", rpc("prompts/get", `{"name":"deploy"}`), nil, 403, "mcp:tools ops:deploy"},
		{"prompt name is not a tool name", "mcp:tools", rpc("tools/call", `{"name":"deploy"}`), nil, 200, ""},
		{"members in any order", "mcp:tools", `{"params":{"arguments":{"x":[1,{"y":null}]},"name":"write_file"},"id":1,"method":"tools/call","jsonrpc":"2.0"}`, nil, 403, "mcp:tools files:write"},
		{"escaped member name and value", "mcp:tools", `{"jsonrpc":"2.0","id":1,"\u006dethod":"tools\/call","params":{"name":"write\u005ffile"}}`, nil, 403, "mcp:tools files:write"},
		{"RS-15 Mcp-Name disagrees with the body", "mcp:tools files:read", toolCall("delete_file"),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "read_file"}, 400, "-32020"},
		{"TR-05 Mcp-Method disagrees with the body", "mcp:tools mcp:read", rpc("tools/list", "{}"),
			map[string]string{"Mcp-Method": "tools/call"}, 400, "-32020"},
		{"TR-05 headers that agree", "mcp:tools", toolCall("read_file"),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "read_file"}, 200, ""},
		{"TR-05 base64 Mcp-Name that agrees", "mcp:tools", toolCall("réad file"),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?csOpYWQgZmlsZQ==?="}, 200, ""},
		{"TR-05 base64 Mcp-Name that disagrees", "mcp:tools", toolCall("write_file"),
			map[string]string{"Mcp-Name": "=?base64?cmVhZF9maWxl?="}, 400, "-32020"},
		{"TR-05 Mcp-Name on a response body", "mcp:tools", `{"jsonrpc":"2.0","id":1,"result":{}}`,
			map[string]string{"Mcp-Method": "tools/call"}, 400, "-32020"},
		{"TR-04 protocol version header disagrees with _meta", "mcp:tools", rpc("tools/call", `{"name":"read_file","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`),
			map[string]string{"MCP-Protocol-Version": "2026-07-28"}, 400, "-32020"},
		{"TR-04 protocol versions that agree", "mcp:tools", rpc("tools/call", `{"name":"read_file","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`),
			map[string]string{"MCP-Protocol-Version": "2026-07-28"}, 200, ""},
		{"JSON array body (batch)", "admin mcp:read", `[` + toolCall("write_file") + `]`, nil, 400, "-32600"},
		{"malformed JSON", "admin", `{"method":"tools/call",`, nil, 400, "-32700"},
		{"trailing garbage", "admin", toolCall("x") + "x", nil, 400, "-32700"},
		{"duplicate method", "mcp:tools", `{"method":"tools/list","method":"tools/call","params":{"name":"write_file"}}`, nil, 400, "-32700"},
		{"duplicate tool name", "mcp:tools", `{"method":"tools/call","params":{"name":"read_file","name":"write_file"}}`, nil, 400, "-32700"},
		{"case-variant method member", "mcp:tools", `{"method":"tools/list","Method":"tools/call","params":{"name":"write_file"}}`, nil, 400, "-32700"},
		{"case-variant name member", "mcp:tools", `{"method":"tools/call","params":{"name":"read_file","NAME":"write_file"}}`, nil, 400, "-32700"},
		{"Unicode fold of params", "mcp:tools", `{"method":"tools/call","param\u017f":{"name":"write_file"}}`, nil, 400, "-32700"},
		{"invalid UTF-8 in the tool name", "mcp:tools", "{\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\xff\"}}", nil, 400, "-32700"},
		{"lone surrogate escape", "mcp:tools", `{"method":"tools/call","params":{"name":"\ud800"}}`, nil, 400, "-32700"},
		{"body too large", "admin", rpc("tools/call", `{"name":"x","arguments":{"pad":"`+strings.Repeat("a", 5000)+`"}}`), nil, 413, "-32600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := f.token(func(c *oauthtest.AccessToken) { c.Scope = tt.scope })
			req := mcpPost(tok, tt.body)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec, s := f.serve(req)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d (%s)", rec.Code, tt.status, rec.Body)
			}
			switch tt.status {
			case 200:
				if s.body != tt.body {
					t.Errorf("the handler got body %q, want it restored", s.body)
				}
			case 403:
				c := bearerChallenge(t, rec)
				if got := c.Value("scope"); got != tt.want || c.Value("error") != "insufficient_scope" {
					t.Errorf("challenge = %+v, want scope %q", c, tt.want)
				}
			default:
				if got := rpcErrorCode(t, rec.Body.Bytes()); itoa(int64(got)) != tt.want {
					t.Errorf("JSON-RPC code = %d, want %s", got, tt.want)
				}
				if rec.Header().Get("WWW-Authenticate") != "" {
					t.Error("a body error carries a challenge")
				}
			}
			if tt.status != 200 && s.count() != 0 {
				t.Error("RS-15: the handler ran")
			}
		})
	}
}

// TestPolicyStableScopes covers RS-14: the same operation always gets the
// same challenge scope.
func TestPolicyStableScopes(t *testing.T) {
	t.Parallel()
	policy, _ := resource.ParsePolicy([]byte(issuePolicy))
	f := newFixture(t, func(c *resource.Config) { c.Policy = policy })
	var first string
	for i, scope := range []string{"", "mcp:tools", "files:read", "mcp:tools files:read mcp:read"} {
		tok := f.token(func(c *oauthtest.AccessToken) { c.Scope = scope })
		rec, _ := f.serve(mcpPost(tok, toolCall("write_file")))
		got := bearerChallenge(t, rec).Value("scope")
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("RS-14: scope %q for token %q, %q before", got, scope, first)
		}
	}
}

// trackingBody reports whether anyone read it.
type trackingBody struct {
	io.Reader
	read bool
}

func (b *trackingBody) Read(p []byte) (int, error) { b.read = true; return b.Reader.Read(p) }
func (b *trackingBody) Close() error               { return nil }

// TestDefaultOnlyPolicyLeavesBodyAlone: with only a default rule the body
// is never read by the middleware, and the rule still applies.
func TestDefaultOnlyPolicyLeavesBodyAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Policy = &resource.Policy{Default: []string{"mcp:tools"}} })
	body := &trackingBody{Reader: strings.NewReader(toolCall("write_file"))}
	req := mcpPost(f.token(nil), "")
	req.Body = body
	var readBeforeHandler bool
	var sameBody bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readBeforeHandler = body.read
		sameBody = r.Body == io.ReadCloser(body)
	})
	rec := httpRecorder()
	f.v.Middleware(h).ServeHTTP(rec, req)
	if rec.Code != 200 || readBeforeHandler || !sameBody {
		t.Errorf("status %d, body read by the middleware: %v, same body: %v", rec.Code, readBeforeHandler, sameBody)
	}
	rec2, _ := f.serve(mcpPost(f.token(func(c *oauthtest.AccessToken) { c.Scope = "files:read" }), ""))
	if rec2.Code != 403 || bearerChallenge(t, rec2).Value("scope") != "mcp:tools" {
		t.Errorf("default rule: %d %q", rec2.Code, rec2.Header().Get("WWW-Authenticate"))
	}
}

// TestGrants covers RS-22's building block: handlers filter results by the
// caller's scopes, implications included.
func TestGrants(t *testing.T) {
	t.Parallel()
	policy, _ := resource.ParsePolicy([]byte(issuePolicy))
	f := newFixture(t, func(c *resource.Config) { c.Policy = policy })
	info := &resource.TokenInfo{Scopes: []string{"admin"}}
	if !f.v.Grants(info, "files:write", "mcp:tools") || f.v.Grants(info, "ops:deploy") || f.v.Grants(nil, "x") {
		t.Error("Grants")
	}
}

// TestScopeErrorDoesNotShareThePolicy: the scopes a step-up event and its
// ScopeError report are a copy: an audit hook that changes them leaves the
// policy as configured for later requests.
func TestScopeErrorDoesNotShareThePolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) {
		c.Policy = &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"write_file": {"files:write"}}}
		c.Audit = func(_ context.Context, e resource.Event) {
			for i := range e.Required {
				e.Required[i] = "mcp:tools"
			}
			var se *resource.ScopeError
			if errors.As(e.Err, &se) {
				for i := range se.Required {
					se.Required[i] = "mcp:tools"
				}
			}
		}
	})
	h := f.v.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i := range 2 {
		rec := httpRecorder()
		h.ServeHTTP(rec, mcpPost(f.token(nil), toolCall("write_file")))
		if rec.Code != http.StatusForbidden || bearerChallenge(t, rec).Value("scope") != "mcp:tools files:write" {
			t.Fatalf("request %d: status %d, challenge %q", i, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
}
