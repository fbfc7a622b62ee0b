package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/internal/revproxy"
)

// TestPeerProxyRemovesEverySpelling: the sdk peer removes credentials and
// identity headers in every spelling, as protect does, so that the
// comparison measures the same work.
func TestPeerProxyRemovesEverySpelling(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: "alice", Expiration: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(peerProxy(u, true))
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer t")
	for _, k := range []string{"X_Forwarded_User", "x_forwarded_user", "X-Forwarded_Email", "X_Auth_Request_User", "Proxy_Authorization", "X-Forwarded-User"} {
		req.Header[k] = []string{"mallory"}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	hdr := <-got
	for k, vs := range hdr {
		if k == "Authorization" || strings.Contains(strings.Join(vs, ","), "mallory") {
			t.Errorf("upstream got %s: %q", k, vs)
		}
	}
	if v := hdr.Values("X-Forwarded-User"); len(v) != 1 || v[0] != "alice" {
		t.Errorf("X-Forwarded-User %q, want alice", v)
	}
}

// TestPeerProxyIsTuned: both peers are the tuned floor, protect's own
// upstream transport settings and a copy-buffer pool, so that -compare
// measures what sits in front of the proxy.
func TestPeerProxyIsTuned(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	for _, identity := range []bool{false, true} {
		p := peerProxy(u, identity)
		tr, ok := p.Transport.(*http.Transport)
		if !ok || tr.Proxy != nil || tr.MaxIdleConnsPerHost != revproxy.Transport().MaxIdleConnsPerHost {
			t.Errorf("identity %v: transport %#v", identity, p.Transport)
		}
		if _, ok := p.BufferPool.(*revproxy.BufferPool); !ok {
			t.Errorf("identity %v: buffer pool %T", identity, p.BufferPool)
		}
	}
}
