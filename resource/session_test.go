package resource_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// sessionHandler is a minimal stateful MCP handler: a request without
// Mcp-Session-Id opens session "s-<n>", a request with one must name an
// open session (404 otherwise), DELETE ends it. It records the session ID
// of every request it serves.
type sessionHandler struct {
	mu   sync.Mutex
	open map[string]bool
	n    int
	seen []string
}

func (s *sessionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.Header.Get("Mcp-Session-Id")
	s.seen = append(s.seen, r.Method+" "+id)
	if id == "" {
		s.n++
		id = "s-" + itoa(int64(s.n))
		s.open[id] = true
		w.Header().Set("Mcp-Session-Id", id)
		w.WriteHeader(http.StatusOK)
		return
	}
	if !s.open[id] {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		delete(s.open, id)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Mcp-Session-Id", id) // some servers repeat it
	w.WriteHeader(http.StatusOK)
}

func (s *sessionHandler) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// TestSessionBinding: the session ID a client sees is bound to the user
// who opened the session. Another user's token with it, on POST, GET or
// DELETE, gets 404 before the handler runs (and an audit event); the
// owner's session keeps working, also with a refreshed or stepped-up
// token; a replica with the same key accepts it, one with another key
// does not.
func TestSessionBinding(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("k", resource.MinSessionKeyBytes))
	withKey := func(k []byte) func(*resource.Config) {
		return func(c *resource.Config) { c.SessionKey = k }
	}
	f := newFixture(t, withKey(key))
	replica := replicaOf(t, f, withKey(key))
	stranger := replicaOf(t, f, withKey([]byte(strings.Repeat("x", resource.MinSessionKeyBytes))))
	unkeyed := replicaOf(t, f, nil)
	sub := func(s string) func(*oauthtest.AccessToken) {
		return func(c *oauthtest.AccessToken) { c.Subject = s }
	}
	alice, bob := f.token(sub("alice")), f.token(sub("bob"))
	refreshed := f.token(func(c *oauthtest.AccessToken) { c.Subject, c.ID = "alice", "jti-2" })
	steppedUp := f.token(func(c *oauthtest.AccessToken) { c.Subject, c.ID, c.Scope = "alice", "jti-3", "mcp:tools files:write" })

	handler := &sessionHandler{open: map[string]bool{}}
	serve := func(fx *fixture, method, token, sid string) *httptest.ResponseRecorder {
		req := mcpPost(token, "")
		req.Method = method
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		rec := httptest.NewRecorder()
		fx.v.Middleware(handler).ServeHTTP(rec, req)
		return rec
	}

	open := serve(f, http.MethodPost, alice, "")
	sid := open.Header().Get("Mcp-Session-Id")
	if open.Code != 200 || !strings.HasPrefix(sid, "s-1.") || len(sid) <= len("s-1.") {
		t.Fatalf("open: status %d, session ID %q", open.Code, sid)
	}
	for i := 0; i < len(sid); i++ {
		if sid[i] < 0x21 || sid[i] > 0x7e {
			t.Fatalf("session ID %q is not visible ASCII", sid)
		}
	}

	for _, tt := range []struct {
		name   string
		fx     *fixture
		method string
		token  string
		sid    string
		status int
		seenAs string // the session ID the handler saw; "" when not called
	}{
		{"owner POST", f, http.MethodPost, alice, sid, 200, "POST s-1"},
		{"other user POST", f, http.MethodPost, bob, sid, 404, ""},
		{"other user GET", f, http.MethodGet, bob, sid, 404, ""},
		{"other user DELETE", f, http.MethodDelete, bob, sid, 404, ""},
		{"owner's handler ID without the MAC", f, http.MethodPost, alice, "s-1", 404, ""},
		{"owner with a forged MAC", f, http.MethodPost, alice, "s-1.AAAAAAAAAAAAAAAAAAAAAA", 404, ""},
		{"another user's MAC on the owner's ID", f, http.MethodPost, bob, sid[:len(sid)-1] + "A", 404, ""},
		{"owner GET after the attempts", f, http.MethodGet, alice, sid, 200, "GET s-1"},
		{"owner with a refreshed token", f, http.MethodPost, refreshed, sid, 200, "POST s-1"},
		{"owner after step-up", f, http.MethodPost, steppedUp, sid, 200, "POST s-1"},
		{"replica with the same key", replica, http.MethodPost, alice, sid, 200, "POST s-1"},
		{"replica with another key", stranger, http.MethodPost, alice, sid, 404, ""},
		{"verifier with a random key", unkeyed, http.MethodPost, alice, sid, 404, ""},
		{"owner DELETE", f, http.MethodDelete, alice, sid, 204, "DELETE s-1"},
	} {
		before := len(handler.calls())
		rec := serve(tt.fx, tt.method, tt.token, tt.sid)
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.status)
		}
		calls := handler.calls()[before:]
		switch {
		case tt.seenAs == "" && len(calls) != 0:
			t.Errorf("%s: the handler was called (%q)", tt.name, calls)
		case tt.seenAs != "" && (len(calls) != 1 || calls[0] != tt.seenAs):
			t.Errorf("%s: handler saw %q, want %q", tt.name, calls, tt.seenAs)
		}
		if got := rec.Header().Get("Mcp-Session-Id"); tt.status == 200 && got != sid {
			t.Errorf("%s: response session ID %q, want %q", tt.name, got, sid)
		}
		if tt.status == 404 {
			ev := tt.fx.events.all()
			if e := ev[len(ev)-1]; e.Decision != resource.DecisionDeny || !errors.Is(e.Err, resource.ErrUnknownSession) || e.Status != 404 {
				t.Errorf("%s: audit event %+v", tt.name, e)
			}
			if strings.Contains(rec.Body.String(), "user") {
				t.Errorf("%s: body %q says more than an unknown session", tt.name, rec.Body.String())
			}
		}
	}

	// Bob's own session is bound to Bob.
	bobSID := serve(f, http.MethodPost, bob, "").Header().Get("Mcp-Session-Id")
	if bobSID == "" || bobSID == sid {
		t.Fatalf("bob's session ID %q", bobSID)
	}
	if rec := serve(f, http.MethodPost, alice, bobSID); rec.Code != 404 {
		t.Errorf("alice on bob's session: %d", rec.Code)
	}
	// A handler that sets the header and returns without writing gets it
	// bound too.
	silent := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("Mcp-Session-Id", "quiet") })
	srv := httptest.NewServer(f.v.Middleware(silent))
	defer srv.Close()
	sreq, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	sreq.Header.Set("Authorization", "Bearer "+alice)
	sresp, err := srv.Client().Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	sresp.Body.Close()
	if got := sresp.Header.Get("Mcp-Session-Id"); !strings.HasPrefix(got, "quiet.") {
		t.Errorf("session ID of a handler that wrote nothing: %q", got)
	}

	// Two Mcp-Session-Id headers are refused; an empty one names no session.
	req := mcpPost(alice, "")
	req.Header["Mcp-Session-Id"] = []string{bobSID, bobSID}
	rec := httptest.NewRecorder()
	f.v.Middleware(handler).ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Errorf("two session IDs: %d", rec.Code)
	}
}

// replicaOf returns another Verifier for f's resource, trusting f's
// signing key, with its own audit log.
func replicaOf(t *testing.T, f *fixture, mutate func(*resource.Config)) *fixture {
	t.Helper()
	return newFixtureOn(t, f.key, f.clock, mutate)
}

// TestSessionKeyConfig: a configured key shorter than MinSessionKeyBytes is
// refused.
func TestSessionKeyConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		key []byte
		ok  bool
	}{
		{nil, true},
		{make([]byte, resource.MinSessionKeyBytes), true},
		{make([]byte, resource.MinSessionKeyBytes-1), false},
		{[]byte{}, false},
	} {
		_, err := resource.New(resource.Config{Resource: testResource, SessionKey: tt.key,
			Issuers: []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{}}}})
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, resource.ErrInvalidConfig)) {
			t.Errorf("key of %d bytes: %v", len(tt.key), err)
		}
	}
}

// TestCORSForMCP: for an allowed origin, responses expose Mcp-Session-Id
// and WWW-Authenticate, and a preflight allows the MCP request headers and
// methods.
func TestCORSForMCP(t *testing.T) {
	t.Parallel()
	const origin = "https://app.example.com"
	f := newFixture(t, func(c *resource.Config) { c.AllowedOrigins = []string{origin} })
	h := f.v.Middleware(&sessionHandler{open: map[string]bool{}})

	pre := httptest.NewRequest(http.MethodOptions, testResource, nil)
	pre.Header.Set("Origin", origin)
	pre.Header.Set("Access-Control-Request-Method", "DELETE")
	pre.Header.Set("Access-Control-Request-Headers", "authorization,mcp-session-id,mcp-protocol-version")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	allowed := strings.ToLower(rec.Header().Get("Access-Control-Allow-Headers"))
	for _, name := range []string{"Authorization", "DPoP", "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-ID", "Content-Type"} {
		if !strings.Contains(allowed, strings.ToLower(name)) {
			t.Errorf("preflight does not allow %s: %q", name, allowed)
		}
	}
	if got := rec.Header().Get("Access-Control-Allow-Methods"); got != "GET, POST, DELETE" {
		t.Errorf("Access-Control-Allow-Methods = %q", got)
	}

	for _, token := range []string{f.token(nil), ""} {
		req := mcpPost(token, "")
		req.Header.Set("Origin", origin)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		exposed := rec.Header().Get("Access-Control-Expose-Headers")
		if !strings.Contains(exposed, "Mcp-Session-Id") || !strings.Contains(exposed, "WWW-Authenticate") {
			t.Errorf("status %d: Access-Control-Expose-Headers = %q", rec.Code, exposed)
		}
	}
}
