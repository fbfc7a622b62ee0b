package resource_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	headerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	metaParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

// tracedFixture is a fixture whose spans go to an in-memory exporter.
func tracedFixture(t *testing.T, mutate func(*resource.Config)) (*fixture, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	f := newFixture(t, func(c *resource.Config) {
		c.TracerProvider = tp
		if mutate != nil {
			mutate(c)
		}
	})
	return f, exp
}

func spanAttrs(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// spansByName indexes the recorded spans, checking that none holds the
// token, a part of it, or the subject.
func spansByName(t *testing.T, exp *tracetest.InMemoryExporter, secrets ...string) map[string]tracetest.SpanStub {
	t.Helper()
	out := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		out[s.Name] = s
		for k, v := range spanAttrs(s) {
			for _, sec := range secrets {
				if strings.Contains(v, sec) {
					t.Errorf("span %s attribute %s holds %q", s.Name, k, sec)
				}
			}
		}
		if strings.Contains(s.Status.Description, "user-1") {
			t.Errorf("span %s status holds the subject", s.Name)
		}
	}
	exp.Reset()
	return out
}

// secretsOf are the strings no span may hold: the token's three parts and
// the subject.
func secretsOf(tok string) []string {
	return append(strings.Split(tok, "."), "user-1")
}

// TestTraceAllowed: an allowed request records a server span, a child of
// the traceparent header, with the decision, scheme, issuer, client and
// MCP method, and a verify child; the wrapped handler's context holds the
// request span.
func TestTraceAllowed(t *testing.T) {
	t.Parallel()
	f, exp := tracedFixture(t, nil)
	tok := f.token(nil)
	req := mcpPost(tok, toolCall("search"))
	req.Header.Set("traceparent", headerParent)
	var handlerSpan trace.SpanContext
	f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlerSpan = trace.SpanContextFromContext(r.Context())
	})).ServeHTTP(httpRecorder(), req)
	spans := spansByName(t, exp, secretsOf(tok)...)
	rs, ok := spans["mcpauth.resource.request"]
	if !ok {
		t.Fatalf("no request span in %v", spans)
	}
	if got := rs.SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" || rs.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("request span trace %s parent %s: not the traceparent header's", got, rs.Parent.SpanID())
	}
	if rs.SpanKind != trace.SpanKindServer {
		t.Errorf("kind %v", rs.SpanKind)
	}
	a := spanAttrs(rs)
	for k, want := range map[string]string{"mcpauth.decision": "allow", "mcpauth.scheme": "Bearer", "mcpauth.issuer": testIssuer,
		"oauth.client_id": "client-1", "mcp.method.name": "tools/call", "gen_ai.tool.name": "search"} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	if handlerSpan.SpanID() != rs.SpanContext.SpanID() {
		t.Error("the handler's context does not hold the request span")
	}
	vs, ok := spans["mcpauth.resource.verify"]
	if !ok || vs.Parent.SpanID() != rs.SpanContext.SpanID() || spanAttrs(vs)["mcpauth.outcome"] != "ok" {
		t.Errorf("verify span %+v", vs)
	}
}

// TestTraceMeta: the trace context of the body's params._meta (SEP-414)
// is the parent, over the header's.
func TestTraceMeta(t *testing.T) {
	t.Parallel()
	f, exp := tracedFixture(t, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","_meta":{"traceparent":"` + metaParent + `","tracestate":"vendor=x"}}}`
	req := mcpPost(f.token(nil), body)
	req.Header.Set("traceparent", headerParent)
	rec, s := f.serve(req)
	if rec.Code != http.StatusOK || !strings.Contains(s.body, metaParent) {
		t.Fatalf("%d; the handler got %q", rec.Code, s.body)
	}
	rs := spansByName(t, exp)["mcpauth.resource.request"]
	if rs.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || rs.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("request span trace %s parent %s: not _meta's", rs.SpanContext.TraceID(), rs.Parent.SpanID())
	}
	if rs.SpanContext.TraceState().Get("vendor") != "x" {
		t.Errorf("tracestate %q", rs.SpanContext.TraceState())
	}
	// A body that is no JSON-RPC message passes as it does without
	// tracing, under the header's context.
	req = mcpPost(f.token(nil), `not json`)
	req.Header.Set("traceparent", headerParent)
	if rec, _ := f.serve(req); rec.Code != http.StatusOK {
		t.Fatalf("tracing refused an unparsed body: %d", rec.Code)
	}
	if rs := spansByName(t, exp)["mcpauth.resource.request"]; rs.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace %s, want the header's", rs.SpanContext.TraceID())
	}
}

// TestTraceRefusals: refused requests record the decision, status and
// fixed reason, and the failing step's span its outcome; never the token.
func TestTraceRefusals(t *testing.T) {
	t.Parallel()
	f, exp := tracedFixture(t, func(c *resource.Config) {
		c.Policy = &resource.Policy{Tools: map[string][]string{"deploy": {"ops:deploy"}}}
		c.RateLimit = &resource.RateLimit{Tools: map[string]resource.Rate{"search": {PerSecond: 0.001, Burst: 1}}}
	})
	expired := f.token(func(c *oauthtest.AccessToken) { c.Expiry = f.clock.Now().Add(-5 * time.Minute) })
	good := f.token(nil)
	for _, tt := range []struct {
		name, token, body        string
		decision, status, reason string
		step                     string
	}{
		{"no token", "", "", "deny", "401", "resource: no access token", ""},
		{"expired", expired, "", "deny", "401", "token expired", "mcpauth.resource.verify"},
		{"scope", good, toolCall("deploy"), "step_up", "403", "", "mcpauth.resource.policy"},
		{"first search", good, toolCall("search"), "allow", "", "", ""},
		{"rate limited", good, toolCall("search"), "deny", "429", "rate limit exceeded", "mcpauth.resource.policy"},
	} {
		req := mcpPost(tt.token, tt.body)
		req.Header.Del("Mcp-Method")
		f.serve(req)
		spans := spansByName(t, exp, append(secretsOf(good), strings.Split(expired, ".")...)...)
		a := spanAttrs(spans["mcpauth.resource.request"])
		if a["mcpauth.decision"] != tt.decision || a["http.response.status_code"] != tt.status ||
			(tt.reason != "" && a["mcpauth.reason"] != tt.reason) {
			t.Errorf("%s: request span %v", tt.name, a)
		}
		if tt.step != "" {
			if s := spanAttrs(spans[tt.step]); s["mcpauth.outcome"] == "ok" || s["mcpauth.outcome"] == "" {
				t.Errorf("%s: %s outcome %q", tt.name, tt.step, s["mcpauth.outcome"])
			}
		}
	}
}

// TestTraceExchange: an exchange records a client span, a child of the
// request span, with its target, outcome and cache use, never a token.
func TestTraceExchange(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	as := exchangeAS(t, oauthtest.ASOptions{})
	f, ex, tok := exchangeFixture(t, as, resource.ExchangeConfig{CacheSize: 8, TracerProvider: tp})
	for range 2 {
		if _, err := exchangeThrough(f, ex, tok); err != nil {
			t.Fatal(err)
		}
	}
	var got []map[string]string
	for _, s := range exp.GetSpans() {
		if s.Name != "mcpauth.resource.exchange" {
			continue
		}
		a := spanAttrs(s)
		for k, v := range a {
			if strings.Contains(v, "gh-token") || strings.Contains(v, strings.Split(tok, ".")[1]) {
				t.Errorf("attribute %s holds a token", k)
			}
		}
		got = append(got, a)
	}
	if len(got) != 2 || got[0]["mcpauth.exchange.audience"] != "github" || got[0]["mcpauth.outcome"] != "ok" ||
		got[0]["mcpauth.exchange.cached"] != "false" || got[1]["mcpauth.exchange.cached"] != "true" {
		t.Fatalf("exchange spans %v", got)
	}
}
