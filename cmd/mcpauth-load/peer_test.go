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
