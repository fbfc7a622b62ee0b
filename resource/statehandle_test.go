package resource_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// handleStore is what an MCP server does with state handles (RS-21): each
// handle records the subject it was issued to, and is honoured only for
// that subject.
type handleStore struct {
	mu      sync.Mutex
	owners  map[string]string
	counter int
}

func (s *handleStore) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := resource.TokenInfoFromContext(r.Context())
		var req struct {
			Params struct {
				Handle string `json:"handle"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.Params.Handle == "" {
			s.counter++
			h := "handle-" + itoa(int64(s.counter))
			s.owners[h] = info.Subject
			_, _ = io.WriteString(w, h)
			return
		}
		if s.owners[req.Params.Handle] != info.Subject {
			http.Error(w, "unknown handle", http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// TestStateHandlesAreNotCredentials covers RS-21: a handle without a token
// is refused by the middleware, and the validated subject lets the server
// refuse another user's handle. (Session IDs, which the middleware binds
// to their user itself, are covered by TestSessionBinding.)
func TestStateHandlesAreNotCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	store := &handleStore{owners: map[string]string{}}
	h := f.v.Middleware(store.handler())
	alice := f.token(func(c *oauthtest.AccessToken) { c.Subject = "alice" })
	bob := f.token(func(c *oauthtest.AccessToken) { c.Subject = "bob" })
	call := func(token, handle string) (int, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"next","handle":"` + handle + `"}}`
		rec := httpRecorder()
		h.ServeHTTP(rec, mcpPost(token, body))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	_, handle := call(alice, "")
	if code, _ := call(alice, handle); code != 200 {
		t.Fatalf("owner using the handle: %d", code)
	}
	if code, _ := call("", handle); code != 401 {
		t.Errorf("RS-21: handle without a token: %d, want 401", code)
	}
	if code, _ := call(bob, handle); code != 404 {
		t.Errorf("RS-21: another user's handle: %d, want 404", code)
	}
}
