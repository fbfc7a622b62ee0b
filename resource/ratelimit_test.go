package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	rl, err := resource.ParseRateLimit([]byte(`{"identity":{"per_second":5,"burst":20},"tools":{"search":{"per_second":0.5,"burst":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if rl.Identity.Burst != 20 || rl.Tools["search"].PerSecond != 0.5 {
		t.Fatalf("parsed %+v", rl)
	}
	for _, bad := range []string{
		`{"identty":{"per_second":1,"burst":1}}`,
		`{"identity":{"per_second":0,"burst":1}}`,
		`{"identity":{"per_second":1,"burst":0}}`,
		`{"tools":{"x":{"per_second":-1,"burst":1}}}`,
		`{"max_tracked":-1}`,
		`[]`,
	} {
		if _, err := resource.ParseRateLimit([]byte(bad)); !errors.Is(err, resource.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// rateLimited checks a 429 answer: Retry-After and the JSON-RPC error.
func rateLimited(t *testing.T, rec *httptest.ResponseRecorder, wantRetry string) {
	t.Helper()
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429; body %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != wantRetry {
		t.Fatalf("Retry-After %q, want %q", got, wantRetry)
	}
	var body struct {
		JSONRPC string
		Error   struct {
			Code    int
			Message string
			Data    struct{ RetryAfter int }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.JSONRPC != "2.0" || body.Error.Code != -32000 ||
		fmt.Sprint(body.Error.Data.RetryAfter) != wantRetry {
		t.Fatalf("body %s (%v)", rec.Body, err)
	}
}

// TestRateLimitPerIdentity: each verified identity (issuer, subject,
// client) has its own bucket; past its burst a request gets 429 and never
// reaches the handler; the bucket refills with time; a refused token
// spends nobody's budget.
func TestRateLimitPerIdentity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) {
		c.RateLimit = &resource.RateLimit{Identity: resource.Rate{PerSecond: 0.5, Burst: 2}}
	})
	alice := f.token(nil)
	for i := range 2 {
		if rec, s := f.serve(mcpPost(alice, "")); rec.Code != http.StatusOK || s.count() != 1 {
			t.Fatalf("request %d: %d", i+1, rec.Code)
		}
	}
	rec, s := f.serve(mcpPost(alice, ""))
	rateLimited(t, rec, "2")
	if s.count() != 0 {
		t.Fatal("a rate-limited request reached the handler")
	}
	ev := f.events.all()
	if last := ev[len(ev)-1]; last.Decision != resource.DecisionDeny || last.Status != 429 ||
		last.Reason != "rate limit exceeded" || !errors.Is(last.Err, resource.ErrRateLimited) {
		t.Fatalf("audit event %+v", last)
	}
	for name, tok := range map[string]string{
		"another subject": f.token(func(c *oauthtest.AccessToken) { c.Subject = "user-2" }),
		"another client":  f.token(func(c *oauthtest.AccessToken) { c.ClientID = "client-2" }),
	} {
		if rec, _ := f.serve(mcpPost(tok, "")); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d, want its own bucket", name, rec.Code)
		}
	}
	// An invalid token is refused before the limits: it spends nothing.
	bad := f.token(func(c *oauthtest.AccessToken) { c.Subject = "user-3"; c.Audience = []string{"https://other.example"} })
	for range 5 {
		if rec, _ := f.serve(mcpPost(bad, "")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("invalid token: %d", rec.Code)
		}
	}
	if rec, _ := f.serve(mcpPost(f.token(func(c *oauthtest.AccessToken) { c.Subject = "user-3" }), "")); rec.Code != http.StatusOK {
		t.Fatalf("user-3 after refused tokens: %d", rec.Code)
	}
	f.clock.Advance(2 * time.Second)
	if rec, _ := f.serve(mcpPost(alice, "")); rec.Code != http.StatusOK {
		t.Fatalf("after the refill: %d", rec.Code)
	}
}

// TestRateLimitPerTool: a tool's limit applies per identity to that
// tool's calls only; a method's limit to that method.
func TestRateLimitPerTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *resource.Config) {
		c.RateLimit = &resource.RateLimit{
			Methods: map[string]resource.Rate{"tools/list": {PerSecond: 1, Burst: 1}},
			Tools:   map[string]resource.Rate{"search": {PerSecond: 0.1, Burst: 1}},
		}
	})
	tok := f.token(nil)
	post := func(body string) *http.Request {
		req := mcpPost(tok, body)
		req.Header.Del("Mcp-Method")
		return req
	}
	if rec, _ := f.serve(post(toolCall("search"))); rec.Code != http.StatusOK {
		t.Fatalf("first search: %d", rec.Code)
	}
	rec, _ := f.serve(post(toolCall("search")))
	rateLimited(t, rec, "10")
	if rec, _ := f.serve(post(toolCall("fetch"))); rec.Code != http.StatusOK {
		t.Fatalf("another tool: %d", rec.Code)
	}
	if rec, _ := f.serve(post("")); rec.Code != http.StatusOK {
		t.Fatalf("first tools/list: %d", rec.Code)
	}
	rec, _ = f.serve(post(""))
	rateLimited(t, rec, "1")
	other := f.token(func(c *oauthtest.AccessToken) { c.Subject = "user-2" })
	if rec, _ := f.serve(mcpPost(other, toolCall("search"))); rec.Code != http.StatusOK {
		t.Fatalf("another user's search: %d", rec.Code)
	}
}

// TestRateLimitManyIdentities drives thousands of distinct subjects
// through the middleware at once, with a frozen clock: every identity gets
// exactly its burst of the tool, never more and never less, whatever the
// others do (fairness), and the tables never hold more than their bound.
func TestRateLimitManyIdentities(t *testing.T) {
	t.Parallel()
	const (
		burst      = 3
		perSubject = burst + 2
		requests   = 10_000 // 2 000 subjects
		bound      = 500
		workers    = 16
	)
	f := newFixture(t, func(c *resource.Config) {
		c.Audit = nil
		c.RateLimit = &resource.RateLimit{
			Identity:   resource.Rate{PerSecond: 1, Burst: 100},
			Tools:      map[string]resource.Rate{"whoami": {PerSecond: 0.001, Burst: burst}},
			MaxTracked: bound,
		}
	})
	srv := httptest.NewServer(f.v.Middleware((&seen{}).handler()))
	defer srv.Close()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{
		Target: srv.URL + "/mcp", Client: srv.Client(), Concurrency: workers, MaxRequests: requests, Duration: 5 * time.Minute,
		Next: func(w, i int) loadgen.Request {
			sub := fmt.Sprintf("user-%d-%d", w, i/perSubject)
			want := http.StatusOK
			if i%perSubject >= burst {
				want = http.StatusTooManyRequests
			}
			return loadgen.Request{Kind: fmt.Sprint(want), WantStatus: want,
				Token: f.token(func(c *oauthtest.AccessToken) { c.Subject = sub })}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TransportErrors != 0 || rep.Wrong() != 0 {
		t.Fatalf("%d transport errors, %d wrongly allowed, %d wrongly refused of %d requests",
			rep.TransportErrors, rep.WronglyAllowed, rep.WronglyRefused, rep.Requests)
	}
	if rep.Requests < requests*9/10 {
		t.Fatalf("only %d requests ran", rep.Requests)
	}
	// Two rules (identity and tool), each at most bound identities.
	if n := resource.RateLimitTracked(f.v); n > 2*bound || n < bound {
		t.Fatalf("tables hold %d identities, bound 2×%d", n, bound)
	}
}
