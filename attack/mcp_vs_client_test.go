package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpauth/mcpauth/client"
)

const prmPath = "/.well-known/oauth-protected-resource/mcp"

// hostileMCP is an MCP server on mcp.example.com that serves prm (nil: 404)
// at the path-inserted well-known URL and answers /mcp with serve.
func hostileMCP(n *vnet, prm map[string]any, serve func(w http.ResponseWriter, r *http.Request, call int64)) *atomic.Int64 {
	calls := &atomic.Int64{}
	mux := http.NewServeMux()
	mux.HandleFunc(prmPath, func(w http.ResponseWriter, r *http.Request) {
		if prm == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(prm)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) { serve(w, r, calls.Add(1)) })
	mux.HandleFunc("/", http.NotFound)
	n.Serve(mcpHost, mux)
	return calls
}

// challenge401 answers every request with 401 and the given challenge.
func challenge401(ch string) func(http.ResponseWriter, *http.Request, int64) {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("WWW-Authenticate", ch)
		w.WriteHeader(http.StatusUnauthorized)
	}
}

const pointer = `Bearer resource_metadata="https://mcp.example.com` + prmPath + `"`

// TestMaliciousMCPServerClient plays a hostile MCP server against
// mcpauth's client (RFC 9728 §3.3, §7.3, §7.7; MCP Security Best Practices
// "SSRF"; requirements CL-01…CL-03, CL-15, CL-23). Names that resolve to
// internal addresses have no listener: a dial there fails the test, so
// every case also proves the guard acted before any packet was sent.
func TestMaliciousMCPServerClient(t *testing.T) {
	t.Parallel()
	const as = "https://as.example.com"
	goodPRM := map[string]any{"resource": mcpResource, "authorization_servers": []string{as}}
	prmWith := func(k string, v any) map[string]any {
		m := map[string]any{"resource": mcpResource, "authorization_servers": []string{as}}
		m[k] = v
		return m
	}
	cases := []struct {
		name  string
		prm   map[string]any
		serve func(http.ResponseWriter, *http.Request, int64)
		want  []error
		asUse bool // the authorization server may be used
	}{
		{name: "CL-03 metadata for another resource", prm: prmWith("resource", "https://other.example.com/mcp"),
			serve: challenge401(pointer), want: []error{errResourceMismatch}},
		{name: "CL-03 metadata for a path prefix through the pointer", prm: prmWith("resource", "https://mcp.example.com"),
			serve: challenge401(pointer), want: []error{errResourceMismatch}},
		{name: "CL-03 metadata for the resource with a trailing slash", prm: prmWith("resource", mcpResource+"/"),
			serve: challenge401(pointer), want: []error{errResourceMismatch}},
		{name: "CL-23 resource_metadata at the cloud metadata service over http",
			serve: challenge401(`Bearer resource_metadata="http://169.254.169.254/latest/meta-data/"`),
			want:  []error{errUnsafeURL, errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 resource_metadata at the cloud metadata address over https",
			serve: challenge401(`Bearer resource_metadata="https://169.254.169.254/latest/meta-data/"`),
			want:  []error{errUnsafeURL, errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 resource_metadata on a name resolving to 10.0.0.5",
			serve: challenge401(`Bearer resource_metadata="https://internal.example.com/prm"`),
			want:  []error{errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 resource_metadata on a name resolving to 127.0.0.1",
			serve: challenge401(`Bearer resource_metadata="https://loopback.example.com/prm"`),
			want:  []error{errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 resource_metadata on an IPv4-mapped private address",
			serve: challenge401(`Bearer resource_metadata="https://[::ffff:10.0.0.5]/prm"`),
			want:  []error{errBlockedAddress, errUnsafeURL, errNoResourceMetadata}},
		{name: "CL-23 resource_metadata on a name resolving to a public and a private address",
			serve: challenge401(`Bearer resource_metadata="https://mixed.example.com/prm"`),
			want:  []error{errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 metadata document redirects to an internal name",
			serve: func(w http.ResponseWriter, r *http.Request, _ int64) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://mcp.example.com/redirect"`)
				w.WriteHeader(http.StatusUnauthorized)
			},
			want: []error{errFetch, errBlockedAddress, errNoResourceMetadata}},
		{name: "CL-23 authorization server on an internal name", prm: prmWith("authorization_servers", []string{"https://internal.example.com"}),
			serve: challenge401(pointer), want: []error{errNoAuthServer, errBlockedAddress}},
		{name: "CL-22 authorization server with a javascript: URL", prm: prmWith("authorization_servers", []string{"javascript:alert(1)"}),
			serve: challenge401(pointer), want: []error{errNoAuthServer, errUnsafeURL, errInvalidMetadata}},
		{name: "CL-01 challenge over 8 KiB", serve: challenge401(`Bearer realm="` + strings.Repeat("r", 16<<10) + `"`),
			want: []error{errNoResourceMetadata}},
		{name: "CL-01 duplicate resource_metadata",
			serve: challenge401(`Bearer resource_metadata="https://internal.example.com/a", resource_metadata="https://mcp.example.com` + prmPath + `"`),
			want:  []error{errNoResourceMetadata}},
		{name: "CL-01 unterminated quoted string", serve: challenge401(`Bearer resource_metadata="https://internal.example.com/a, scope="x`),
			want: []error{errNoResourceMetadata}},
		{name: "CL-22 javascript: resource_metadata", serve: challenge401(`Bearer resource_metadata="javascript:alert(1)"`),
			want: []error{errUnsafeURL, errNoResourceMetadata}},
		{name: "CL-01 scope with characters outside the scope-token syntax", prm: goodPRM,
			serve: challenge401(`Bearer scope="mcp:tools <script>\"", resource_metadata="https://mcp.example.com` + prmPath + `"`),
			want:  []error{errAuthorizationResponse, errNoResourceMetadata, errInvalidMetadata, errUnsafeURL}, asUse: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, sec, logs := newVNet(t), &secrets{}, &logSink{}
			sec.Watch(logs)
			n.Internal("internal.example.com", "10.0.0.5")
			n.Internal("loopback.example.com", "127.0.0.1")
			n.Internal("mixed.example.com", "93.184.216.34", "10.0.0.6")
			startAS(t, n, "as.example.com", sec, logs, asOptions{})
			hostileMCP(n, tc.prm, func(w http.ResponseWriter, r *http.Request, call int64) {
				if r.URL.Path == "/redirect" {
					http.Redirect(w, r, "https://internal.example.com/prm", http.StatusFound)
					return
				}
				tc.serve(w, r, call)
			})
			e := newClientEnv(t, n, sec, nil)
			status, err := e.call(context.Background())
			if err == nil && status == http.StatusOK {
				t.Fatal("the request succeeded")
			}
			if err != nil && !matchesAny(err, tc.want) {
				t.Errorf("err = %v; want one of %v", err, tc.want)
			}
			if !tc.asUse && n.Hits("as.example.com") != 0 {
				t.Errorf("the authorization server was contacted %d times", n.Hits("as.example.com"))
			}
			sec.Check(t)
		})
	}
}

// TestEndlessStepUpClient: an MCP server answers every authorized request
// with 403 insufficient_scope naming a new scope each time, or 401 for
// every token (CL-15). The client stops after MaxAuthorizationAttempts
// authorizations and returns the server's last answer instead of looping.
func TestEndlessStepUpClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request, call int64)
	}{
		{"CL-15 a new scope on every 403", func(w http.ResponseWriter, r *http.Request, call int64) {
			if r.Header.Get("Authorization") == "" {
				challenge401(pointer)(w, r, call)
				return
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="s%d", resource_metadata="https://mcp.example.com%s"`, call%6+1, prmPath))
			w.WriteHeader(http.StatusForbidden)
		}},
		{"CL-15 the same scope on every 403", func(w http.ResponseWriter, r *http.Request, call int64) {
			if r.Header.Get("Authorization") == "" {
				challenge401(pointer)(w, r, call)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin", resource_metadata="https://mcp.example.com`+prmPath+`"`)
			w.WriteHeader(http.StatusForbidden)
		}},
		{"RS-07 every token refused with 401", func(w http.ResponseWriter, r *http.Request, call int64) {
			ch := pointer
			if r.Header.Get("Authorization") != "" {
				ch = `Bearer error="invalid_token", resource_metadata="https://mcp.example.com` + prmPath + `"`
			}
			challenge401(ch)(w, r, call)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, sec, logs := newVNet(t), &secrets{}, &logSink{}
			sec.Watch(logs)
			as := startAS(t, n, "as.example.com", sec, logs, asOptions{})
			calls := hostileMCP(n, map[string]any{"resource": mcpResource, "authorization_servers": []string{as.Issuer}}, tc.serve)
			e := newClientEnv(t, n, sec, nil)
			status, err := e.call(context.Background())
			if err == nil && status == http.StatusOK {
				t.Fatal("served")
			}
			if got := e.auth.n.Load(); got > client.MaxAuthorizationAttempts {
				t.Errorf("%d authorizations; want at most %d", got, client.MaxAuthorizationAttempts)
			}
			if got := calls.Load(); got > 2*client.MaxAuthorizationAttempts+3 {
				t.Errorf("%d requests to the MCP server", got)
			}
			if got := as.Hits("/token"); got > 2*client.MaxAuthorizationAttempts {
				t.Errorf("%d token requests", got)
			}
			sec.Check(t)
		})
	}
}

// TestManyAuthServersClient: a hostile MCP server lists a hundred
// authorization servers, none usable, to turn the client into a request
// generator (each is probed at up to three well-known URLs, each fetch with
// its own timeout). The client tries a bounded number of them and gives up.
func TestManyAuthServersClient(t *testing.T) {
	t.Parallel()
	n, sec, logs := newVNet(t), &secrets{}, &logSink{}
	sec.Watch(logs)
	var issuers []string
	for i := range 100 {
		issuers = append(issuers, fmt.Sprintf("https://evil.example.com/tenant%d", i))
	}
	n.Serve("evil.example.com", http.NotFoundHandler())
	hostileMCP(n, map[string]any{"resource": mcpResource, "authorization_servers": issuers}, challenge401(pointer))
	e := newClientEnv(t, n, sec, nil)
	_, err := e.call(context.Background())
	if !errors.Is(err, errNoAuthServer) {
		t.Errorf("err = %v; want errNoAuthServer", err)
	}
	if got := n.Hits("evil.example.com"); got > 30 {
		t.Errorf("the client sent %d metadata requests for one 401; want at most 30 (a bounded number of authorization servers)", got)
	}
	sec.Check(t)
}

// TestRedirectedRequestClient: once the client holds a token, the MCP
// server redirects the request elsewhere: to another host, to plain http,
// to a look-alike subdomain (CL-19). The token is sent only to the
// resource it was issued for, never to the redirect target.
func TestRedirectedRequestClient(t *testing.T) {
	t.Parallel()
	for _, target := range []string{
		"https://evil.example.com/steal",
		"http://mcp.example.com/mcp",
		"https://evil.mcp.example.com/mcp",
		"https://mcp.example.com/other",
	} {
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			t.Run(fmt.Sprintf("%d %s", status, target), func(t *testing.T) {
				t.Parallel()
				n, sec, logs := newVNet(t), &secrets{}, &logSink{}
				sec.Watch(logs)
				as := startAS(t, n, "as.example.com", sec, logs, asOptions{})
				var leaked atomic.Int64
				catch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Header.Get("Authorization") != "" || r.Header.Get("DPoP") != "" {
						leaked.Add(1)
					}
					w.WriteHeader(http.StatusTeapot)
				})
				n.Serve("evil.example.com", catch)
				n.Serve("evil.mcp.example.com", catch)
				honestMCP(t, n, as.Issuer, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, target, status)
				}))
				e := newClientEnv(t, n, sec, nil)
				_, _ = e.call(context.Background())
				if leaked.Load() != 0 {
					t.Errorf("CL-19: the token followed a redirect to %s through Transport", target)
				}
				// The SDK adapter: the SDK writes the Authorization header
				// itself and sends through OAuthHandler.HTTPClient.
				h, err := e.c.OAuthHandler(mcpResource)
				if err != nil {
					t.Fatal(err)
				}
				ts, err := h.TokenSource(context.Background())
				if err != nil || ts == nil {
					t.Fatalf("no token after the first call: %v", err)
				}
				tok, _ := ts.Token()
				req, _ := http.NewRequest(http.MethodPost, mcpResource, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
				req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				if resp, err := h.HTTPClient(e.net.Transport()).Do(req); err == nil {
					resp.Body.Close()
				}
				if leaked.Load() != 0 {
					t.Errorf("CL-19: the token followed a redirect to %s through OAuthHandler.HTTPClient", target)
				}
				sec.Check(t)
			})
		}
	}
}
