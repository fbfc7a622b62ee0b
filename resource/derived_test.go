package resource_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// TestDerived: a Derived value is computed once per verification and
// reused for every request served from the verified-token cache; another
// token, another Derived, or the cache switched off each get their own
// computation; a context without a verified token yields nothing.
func TestDerived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		disabled bool
		tokens   []int // index of the token each request presents
		want     int   // computations of the first Derived
	}{
		{name: "one token repeated", tokens: []int{0, 0, 0, 0}, want: 1},
		{name: "two tokens", tokens: []int{0, 1, 0, 1, 1}, want: 2},
		{name: "cache disabled", disabled: true, tokens: []int{0, 0, 0}, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *resource.Config) { c.Cache.Disabled = tc.disabled })
			toks := []string{
				f.token(nil),
				f.token(func(c *oauthtest.AccessToken) { c.Subject, c.ID = "user-2", "jti-2" }),
			}
			var subjects, lengths atomic.Int64
			sub := resource.NewDerived(func(info *resource.TokenInfo) string { subjects.Add(1); return "sub:" + info.Subject })
			n := resource.NewDerived(func(info *resource.TokenInfo) int { lengths.Add(1); return len(info.Scopes) })
			h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s, ok := sub.Value(r.Context())
				if !ok || s != "sub:"+resource.TokenInfoFromContext(r.Context()).Subject {
					t.Errorf("Value = %q, %v", s, ok)
				}
				if k, ok := n.Value(r.Context()); !ok || k != 2 {
					t.Errorf("second Derived = %d, %v", k, ok)
				}
			}))
			for _, i := range tc.tokens {
				rec := httpRecorder()
				h.ServeHTTP(rec, mcpPost(toks[i], ""))
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d", rec.Code)
				}
			}
			if got := subjects.Load(); got != int64(tc.want) {
				t.Errorf("computed %d times, want %d", got, tc.want)
			}
			if got := lengths.Load(); got != int64(tc.want) {
				t.Errorf("second Derived computed %d times, want %d", got, tc.want)
			}
		})
	}
	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		d := resource.NewDerived(func(*resource.TokenInfo) string { t.Error("computed without a token"); return "" })
		if v, ok := d.Value(context.Background()); ok || v != "" {
			t.Errorf("Value = %q, %v", v, ok)
		}
	})
}

// TestDerivedConcurrent: concurrent first uses of one verification agree
// on one value (run with -race).
func TestDerivedConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tok := f.token(nil)
	d := resource.NewDerived(func(info *resource.TokenInfo) *string { s := info.Subject; return &s })
	var mu sync.Mutex
	seen := map[*string]bool{}
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := d.Value(r.Context())
		if !ok {
			t.Error("no value")
		}
		mu.Lock()
		seen[p] = true
		mu.Unlock()
	}))
	// Cache the verification first, without computing the value, so that
	// the concurrent requests share one verification and race on its
	// first use.
	f.v.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(httpRecorder(), mcpPost(tok, ""))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httpRecorder(), mcpPost(tok, ""))
		}()
	}
	wg.Wait()
	if len(seen) != 1 {
		t.Errorf("%d distinct values for one verification", len(seen))
	}
}

// TestDerivedBound: a verification keeps the values of at most
// MaxDerivedPerToken Deriveds; further ones (such as a Derived made per
// request) are computed on every use, and never grow the verification.
func TestDerivedBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tok := f.token(nil)
	const n = resource.MaxDerivedPerToken + 4
	counts := make([]atomic.Int64, n)
	ds := make([]*resource.Derived[int], n)
	for i := range ds {
		ds[i] = resource.NewDerived(func(*resource.TokenInfo) int { counts[i].Add(1); return i })
	}
	perRequest := atomic.Int64{}
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i, d := range ds {
			if v, ok := d.Value(r.Context()); !ok || v != i {
				t.Errorf("Derived %d = %d, %v", i, v, ok)
			}
		}
		d := resource.NewDerived(func(*resource.TokenInfo) int { perRequest.Add(1); return -1 })
		if v, ok := d.Value(r.Context()); !ok || v != -1 {
			t.Errorf("per-request Derived = %d, %v", v, ok)
		}
	}))
	const requests = 3
	for range requests {
		rec := httpRecorder()
		h.ServeHTTP(rec, mcpPost(tok, ""))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	}
	for i := range counts {
		want := int64(1)
		if i >= resource.MaxDerivedPerToken {
			want = requests
		}
		if got := counts[i].Load(); got != want {
			t.Errorf("Derived %d computed %d times, want %d", i, got, want)
		}
	}
	if got := perRequest.Load(); got != requests {
		t.Errorf("per-request Derived computed %d times, want %d", got, requests)
	}
}
