package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// BenchmarkProtectOverhead is protect's handler against the bare tuned
// proxy (internal/revproxy's transport and buffer pool, nothing else) on
// the same upstream: the allocations and CPU per request protect adds in
// front of the proxy, without the load generator and the sockets of the
// client side (the -compare harness measures those). "protect" sends one
// repeated token (verified-token cache hits); "protect-fresh" sends tokens
// minted before the loop, each once as long as b.N stays within them (run
// it with -benchtime 2000x or less), so each request verifies a signature.
func BenchmarkProtectOverhead(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(okUpstream))
	defer up.Close()
	upURL, _ := url.Parse(up.URL + "/mcp")
	const res = "http://127.0.0.1:8080/mcp"
	key := oauthtest.NewKey(b, oauthtest.ES256, "k1")
	now := oauthtest.Epoch
	tok := key.Mint(b, oauthtest.AccessToken{Issuer: testIssuer, Subject: "alice", Audience: []string{res},
		ClientID: "cli", Scope: "mcp:tools", IssuedAt: now(), Expiry: now().Add(time.Hour)})
	// A handler of its own for each run, so that fresh tokens are new to it.
	newProtect := func(b *testing.B) http.Handler {
		h, v, err := protectHandler(resource.Config{
			Resource:                  res,
			Issuers:                   []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
			Policy:                    &resource.Policy{Default: []string{"mcp:tools"}},
			InsecureAllowHTTPLoopback: true,
			Now:                       now,
		}, upURL, nil, nil, slog.New(slog.DiscardHandler), now)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { v.Close() })
		return h
	}
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upURL)
			pr.Out.URL.Path = upURL.Path
			pr.SetXForwarded()
		},
		Transport:  revproxy.Transport(),
		BufferPool: revproxy.NewBufferPool(),
	}
	fresh := make([]string, 2000)
	for i := range fresh {
		fresh[i] = key.Mint(b, oauthtest.AccessToken{Issuer: testIssuer, Subject: "alice", Audience: []string{res},
			ClientID: "cli", Scope: "mcp:tools", IssuedAt: now(), Expiry: now().Add(time.Hour), ID: fmt.Sprintf("t%d", i)})
	}
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami"}}`
	for _, c := range []struct {
		name  string
		h     http.Handler // nil: a new protect handler
		fresh bool
	}{{"bare", bare, false}, {"protect", nil, false}, {"protect-fresh", nil, true}} {
		b.Run(c.name, func(b *testing.B) {
			h := c.h
			if h == nil {
				h = newProtect(b)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t := tok
				if c.fresh {
					t, i = fresh[i%len(fresh)], i+1
				}
				req := httptest.NewRequest(http.MethodPost, res, strings.NewReader(body))
				// The headers a go-sdk client's request arrives with (as
				// cmd/mcpauth-load sends them).
				req.Header.Set("Authorization", "Bearer "+t)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "whoami")
				req.Header.Set("User-Agent", "Go-http-client/1.1")
				req.Header.Set("Accept-Encoding", "gzip")
				req.Header.Set("Content-Length", strconv.Itoa(len(body)))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
