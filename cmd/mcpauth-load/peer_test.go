package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpauth/mcpauth/internal/loadgen"
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

// TestSignatureOnly: the jose peer passes a token the issuer signed and
// refuses each token its signature check is there to catch (the probes
// -compare sends before any figure), a missing token and another scheme; it
// checks nothing else (an expired token passes), which is what makes it a
// floor rather than a proxy.
func TestSignatureOnly(t *testing.T) {
	t.Parallel()
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys, err := fetchKeys(ctx, f.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	h := signatureOnly(keys, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	var out bytes.Buffer
	if err := probeRefusals(ctx, srv.Client(), f, []*candidate{{name: josePeer, url: srv.URL + "/mcp"}}, josePeer, joseProbeKinds, &out); err != nil {
		t.Fatal(err)
	}
	fresh, err := f.FreshToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"signed by the issuer", "Bearer " + fresh, http.StatusOK},
		{"scheme in lower case", "bearer " + fresh, http.StatusOK},
		{"expired, not checked", "Bearer " + f.InvalidToken("expired"), http.StatusOK},
		{"no token", "", http.StatusUnauthorized},
		{"another scheme", "Basic " + fresh, http.StatusUnauthorized},
		{"not a JWS", "Bearer abc", http.StatusUnauthorized},
		{"bad signature", "Bearer " + f.InvalidToken("bad-signature"), http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader("{}"))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		}
	}
}
