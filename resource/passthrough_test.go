package resource_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpauth/mcpauth/resource"
)

// countingTransport stands for the network: it counts what would be sent.
type countingTransport struct{ sent atomic.Int64 }

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.sent.Add(1)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}}, nil
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestGuardTransport covers RS-19: the inbound token is refused wherever an
// outbound request carries it, with or without the inbound context.
func TestGuardTransport(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tok := f.token(nil)
	// Verify once so the token is in the verified-token cache, as it is
	// after the middleware let a request through.
	info, err := f.v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	// The context a wrapped handler gets.
	var handlerCtx context.Context
	f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handlerCtx = r.Context() })).
		ServeHTTP(httpRecorder(), mcpPost(tok, ""))
	if resource.TokenInfoFromContext(handlerCtx) == nil {
		t.Fatal("no identity in the handler context")
	}
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + tok))
	tests := []struct {
		name  string
		ctx   context.Context
		build func(r *http.Request)
		where string
	}{
		{"Authorization header", handlerCtx, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }, "header Authorization"},
		{"custom header, bare token", handlerCtx, func(r *http.Request) { r.Header.Set("X-Api-Key", tok) }, "header X-Api-Key"},
		{"cookie", handlerCtx, func(r *http.Request) { r.Header.Set("Cookie", "a=b; session="+tok) }, "header Cookie"},
		{"Basic password", handlerCtx, func(r *http.Request) { r.Header.Set("Authorization", "Basic "+basic) }, "header Authorization"},
		{"query parameter", handlerCtx, func(r *http.Request) { r.URL.RawQuery = "access_token=" + url.QueryEscape(tok) }, "query parameter access_token"},
		{"other query parameter", handlerCtx, func(r *http.Request) { r.URL.RawQuery = "x=1&key=" + tok }, "query parameter key"},
		{"path", handlerCtx, func(r *http.Request) { r.URL.Path = "/v1/" + tok + "/items" }, "URL"},
		{"without the inbound context, by cache", context.Background(), func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }, "header Authorization"},
		{"without the inbound context, query", context.Background(), func(r *http.Request) { r.URL.RawQuery = "t=" + tok }, "query parameter t"},
		{"another token is fine", handlerCtx, func(r *http.Request) { r.Header.Set("Authorization", "Bearer upstream-token-123456789") }, ""},
		{"no token is fine", handlerCtx, func(r *http.Request) {}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := &countingTransport{}
			body := &closeTracker{Reader: strings.NewReader("{}")}
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodPost, "https://upstream.example/api", body)
			tt.build(req)
			resp, err := f.v.GuardTransport(base).RoundTrip(req)
			if tt.where == "" {
				if err != nil || base.sent.Load() != 1 {
					t.Fatalf("err %v, sent %d", err, base.sent.Load())
				}
				resp.Body.Close()
				return
			}
			var pe *resource.PassthroughError
			if !errors.As(err, &pe) || pe.Where != tt.where || !errors.Is(err, resource.ErrTokenPassthrough) {
				t.Fatalf("err = %v, want a PassthroughError in %q", err, tt.where)
			}
			if strings.Contains(err.Error(), tok) {
				t.Error("the error contains the token")
			}
			if base.sent.Load() != 0 {
				t.Error("RS-19: the request was sent")
			}
			if !body.closed {
				t.Error("the request body was not closed")
			}
		})
	}
	_ = info
}

// TestGuardTransportWithoutCache: with the cache off, the inbound context
// is what identifies the token.
func TestGuardTransportWithoutCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) { c.Cache.Disabled = true })
	tok := f.token(nil)
	var handlerCtx context.Context
	f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handlerCtx = r.Context() })).
		ServeHTTP(httpRecorder(), mcpPost(tok, ""))
	base := &countingTransport{}
	req, _ := http.NewRequestWithContext(handlerCtx, http.MethodGet, "https://upstream.example/api", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if _, err := f.v.GuardTransport(base).RoundTrip(req); !errors.Is(err, resource.ErrTokenPassthrough) {
		t.Errorf("err = %v", err)
	}
}
