package resource_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	testResource = "https://mcp.example.com/mcp"
	testIssuer   = "https://auth.example.com"
	testPRM      = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	otherIssuer  = "https://evil.example.net"
)

// fixture is a Verifier with a static ES256 key, a fixed clock and an
// audit log.
type fixture struct {
	t      testing.TB
	key    *oauthtest.Key
	clock  *oauthtest.Clock
	v      *resource.Verifier
	events *eventLog
}

type eventLog struct {
	mu     sync.Mutex
	events []resource.Event
}

func (l *eventLog) add(_ context.Context, e resource.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []resource.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]resource.Event(nil), l.events...)
}

func newFixture(t testing.TB, mutate func(*resource.Config)) *fixture {
	t.Helper()
	return newFixtureOn(t, oauthtest.NewKey(t, oauthtest.ES256, "k1"), oauthtest.NewClock(oauthtest.Epoch()), mutate)
}

// newFixtureOn is newFixture with a given signing key and clock, for
// Verifiers that must accept the same tokens (replicas).
func newFixtureOn(t testing.TB, key *oauthtest.Key, clock *oauthtest.Clock, mutate func(*resource.Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, key: key, clock: clock, events: &eventLog{}}
	cfg := resource.Config{
		Resource: testResource,
		Issuers:  []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: f.key.Public()}}}},
		Now:      f.clock.Now,
		Audit:    f.events.add,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	v, err := resource.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = v.Close() })
	f.v = v
	return f
}

// claims returns valid RFC 9068 claims for the fixture.
func (f *fixture) claims() oauthtest.AccessToken {
	now := f.clock.Now()
	return oauthtest.AccessToken{
		Issuer: testIssuer, Subject: "user-1", Audience: []string{testResource}, ClientID: "client-1",
		Scope: "mcp:tools files:read", ID: "jti-1", IssuedAt: now.Add(-time.Minute), Expiry: now.Add(time.Hour),
	}
}

// token mints a valid token, changed by mutate.
func (f *fixture) token(mutate func(*oauthtest.AccessToken)) string {
	c := f.claims()
	if mutate != nil {
		mutate(&c)
	}
	return f.key.Mint(f.t, c)
}

// seen records what the wrapped handler saw.
type seen struct {
	mu            sync.Mutex
	calls         int
	authorization []string
	dpop          []string
	info          *resource.TokenInfo
	body          string
}

func (s *seen) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.calls++
		s.authorization = r.Header.Values("Authorization")
		s.dpop = r.Header.Values("DPoP")
		s.info = resource.TokenInfoFromContext(r.Context())
		s.body = string(b)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// serve runs req through the fixture's middleware around a recording
// handler.
func (f *fixture) serve(req *http.Request) (*httptest.ResponseRecorder, *seen) {
	s := &seen{}
	rec := httptest.NewRecorder()
	f.v.Middleware(s.handler()).ServeHTTP(rec, req)
	return rec, s
}

// mcpPost builds a JSON-RPC POST with an optional bearer token.
func mcpPost(token, body string) *http.Request {
	if body == "" {
		body = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	}
	req := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func toolCall(name string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":` + jsonString(name) + `,"arguments":{}}}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// bearerChallenge parses the response's Bearer challenge.
func bearerChallenge(t testing.TB, rec *httptest.ResponseRecorder) oauthmeta.Challenge {
	t.Helper()
	chs, err := oauthmeta.ParseChallenges(rec.Header().Values("WWW-Authenticate")...)
	if err != nil {
		t.Fatalf("parse challenge %q: %v", rec.Header().Values("WWW-Authenticate"), err)
	}
	c, ok := oauthmeta.FindChallenge(chs, "Bearer")
	if !ok {
		t.Fatalf("no Bearer challenge in %q (status %d)", rec.Header().Values("WWW-Authenticate"), rec.Code)
	}
	return c
}

// rpcErrorCode returns the JSON-RPC error code of a response body.
func rpcErrorCode(t testing.TB, body []byte) int {
	t.Helper()
	var r struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("body %q is not a JSON-RPC error: %v", body, err)
	}
	return r.Error.Code
}
