package authserver

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestObserverAndSpans: token requests reach the Observer with their
// grant type and outcome, and the tracer as server spans, children of the
// request's traceparent, whose attributes hold no code, token or secret.
func TestObserverAndSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var mu sync.Mutex
	var events []Event
	h := newHarness(t, "", func(c *Config) {
		c.TracerProvider = tp
		c.Observer = ObserverFunc(func(_ context.Context, e Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		})
	})
	q, v := authParams(publicID, publicCB)
	code := h.code(q, v)
	ok := h.exchange(code, v, publicCB, nil)
	if ok.status != http.StatusOK {
		t.Fatalf("exchange: %d", ok.status)
	}
	wantError(t, h.exchange(code, v, publicCB, nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	wantError(t, h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"bogus"}}, basicID, "wrong"),
		http.StatusUnauthorized, oauthmeta.CodeInvalidClient)
	_, _ = h.postHeader(pathToken, url.Values{"grant_type": {"made-up"}}, "", "",
		http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})

	mu.Lock()
	got := append([]Event(nil), events...)
	mu.Unlock()
	want := []Event{
		{Endpoint: EndpointToken, GrantType: "authorization_code", Outcome: OutcomeOK, Status: 200},
		{Endpoint: EndpointToken, GrantType: "authorization_code", Outcome: "invalid_grant", Status: 400},
		{Endpoint: EndpointToken, GrantType: "refresh_token", Outcome: "invalid_client", Status: 401},
		{Endpoint: EndpointToken, Outcome: "invalid_client", Status: 401}, // no client: refused before the grant type
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v", got)
	}
	for i, w := range want {
		g := got[i]
		g.Duration = 0
		if g != w {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	secrets := []string{code, v, ok.tok.AccessToken, ok.tok.RefreshToken, "wrong", "bogus", basicSecret}
	for i, s := range spans {
		if s.Name != "mcpauth.authserver.token" {
			t.Errorf("span %d named %q", i, s.Name)
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.Emit()
			for _, sec := range secrets {
				if strings.Contains(kv.Value.Emit(), sec) {
					t.Errorf("span %d attribute %s holds a secret", i, kv.Key)
				}
			}
		}
		if attrs["mcpauth.outcome"] != want[i].Outcome || attrs["oauth.grant_type"] != want[i].GrantType {
			t.Errorf("span %d attributes %v", i, attrs)
		}
	}
	if last := spans[3]; last.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("the last span's parent %v is not the request's traceparent", last.Parent)
	}
}

// TestObserverUpstreamLogins: each upstream login callback reaches the
// Observer with its outcome: ok for an admitted user, access_denied for
// one the allow-list refuses, and for a replayed callback.
func TestObserverUpstreamLogins(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var outcomes []string
	h, p := upstreamHarness(t, func(c *Config) {
		c.Observer = ObserverFunc(func(_ context.Context, e Event) {
			if e.Endpoint == EndpointUpstreamCallback {
				mu.Lock()
				outcomes = append(outcomes, e.Outcome)
				mu.Unlock()
			}
		})
	})
	q, _ := authParams(publicID, publicCB)
	if resp := newBrowser(t, h).login(q); resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admitted login: %d", resp.StatusCode)
	}
	p.setIdentity(&UpstreamIdentity{Issuer: fakeLoginIssuer, Subject: "mallory", Email: "mallory@evil.example", EmailVerified: true})
	q, _ = authParams(publicID, publicCB)
	newBrowser(t, h).login(q)
	resp, err := h.http.Get(h.url(pathUpstreamCallback + "?state=unknown&code=c"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{OutcomeOK, "access_denied", "access_denied"}; strings.Join(outcomes, " ") != strings.Join(want, " ") {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
}
