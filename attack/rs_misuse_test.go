package attack

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// TestUnknownKidFloodRS: an attacker sends many validly shaped tokens with
// random key IDs to make the resource server hammer the authorization
// server's JWK Set endpoint (go-oidc's unbounded refetch; RS-10 "rate-limited
// refresh"). All are refused, and the flood costs at most one refetch.
func TestUnknownKidFloodRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	if res := e.send(rpc{auth: []string{"Bearer " + e.token(nil)}}); res.status != http.StatusOK {
		t.Fatalf("warm-up: status %d", res.status)
	}
	base := e.iss.Fetches()
	attacker := oauthtest.NewKey(t, oauthtest.ES256, "x")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := attacker.MintWith(t, oauthtest.Header{KeyID: fmt.Sprintf("kid-%d", i)}, e.claims())
			e.sec.Add(tok)
			res := e.send(rpc{auth: []string{"Bearer " + tok}})
			mu.Lock()
			statuses[res.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != 200 {
		t.Errorf("statuses = %v; want 200 × 401", statuses)
	}
	if n := e.iss.Fetches() - base; n > 1 {
		t.Errorf("200 unknown kids caused %d JWK Set fetches; want at most 1", n)
	}
	e.sec.Check(t)
}

// TestHeaderBodyMismatchRS: a token allowed to call whoami names whoami in
// the Mcp-Name header but admin_tool in the body (SEP-2243; RS-15, TR-05).
// The request is refused with -32020 and the tool never runs; the honest
// request for admin_tool gets 403 insufficient_scope.
func TestHeaderBodyMismatchRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	tok := e.token(nil)
	cases := []struct {
		name   string
		r      rpc
		status int
		reason error
	}{
		{"RS-15 Mcp-Name says whoami, body says admin_tool", rpc{name: "admin_tool", header: "whoami"}, 400, reasonHeaderMismatch},
		{"RS-15 Mcp-Name differs in case", rpc{name: "admin_tool", header: "Admin_Tool"}, 400, reasonHeaderMismatch},
		{"RS-15 Mcp-Name of a prefix", rpc{name: "admin_tool", header: "admin"}, 400, reasonHeaderMismatch},
		{"RS-12 honest request for admin_tool without the scope", rpc{name: "admin_tool"}, 403, resource.ErrInsufficientScope},
		{"TR-05 Mcp-Method says tools/list, body says tools/call", rpc{name: "admin_tool", method: "tools/call", header: "admin_tool"}, 403, resource.ErrInsufficientScope},
	}
	for _, tc := range cases {
		tc.r.auth = []string{"Bearer " + tok}
		res := e.send(tc.r)
		if res.status != tc.status {
			t.Errorf("%s: status %d; want %d (%s)", tc.name, res.status, tc.status, clip(res.body, 200))
		}
		if ev := e.lastEvent(); !refused(ev.Err, tc.reason) {
			t.Errorf("%s: audit reason %v; want %v", tc.name, ev.Err, tc.reason)
		}
		if tc.status == 400 && !strings.Contains(res.body, "-32020") {
			t.Errorf("%s: body %s lacks -32020", tc.name, clip(res.body, 200))
		}
	}
	if n := e.adminRuns.Load(); n != 0 {
		t.Errorf("admin_tool ran %d times", n)
	}
	e.sec.Check(t)
}

// TestTokenPassthroughRS: a tool tries to hand the caller's token to an
// upstream API in every place a token can hide (MCP Security Best
// Practices, "Token Passthrough"; RS-19). The guard transport refuses each
// attempt before a byte is sent, including for a token cached from another
// caller, and the tool never sees the Authorization header.
func TestTokenPassthroughRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	caller := e.token(nil)
	other := e.token(func(c *oauthtest.AccessToken) { c.Subject = "user-2"; c.ID = "jti-2" })
	if res := e.send(rpc{auth: []string{"Bearer " + other}}); res.status != http.StatusOK {
		t.Fatalf("other caller: status %d", res.status)
	}
	for _, tc := range []struct{ where, token string }{
		{"header", caller}, {"basic", caller}, {"query", caller}, {"path", caller}, {"custom-header", caller},
		{"header", other}, // another caller's token, known from the verified-token cache
	} {
		e.forwardErr.Store(nil)
		args := fmt.Sprintf(`{"where":%q,"token":%q}`, tc.where, tc.token)
		res := e.send(rpc{auth: []string{"Bearer " + caller}, name: "forward", args: args})
		if res.status != http.StatusOK || !strings.Contains(res.body, "refused") {
			t.Errorf("RS-19 %s: status %d body %s", tc.where, res.status, clip(res.body, 200))
		}
		var err error
		if p := e.forwardErr.Load(); p != nil {
			err = *p
		}
		var pe *resource.PassthroughError
		if !errors.Is(err, resource.ErrTokenPassthrough) || !errors.As(err, &pe) {
			t.Errorf("RS-19 %s: guard error %v", tc.where, err)
		} else {
			// The PassthroughError names the place, never the value. The
			// *url.Error net/http wraps it in repeats the URL the tool
			// built, token included when the tool put it there (query,
			// path): that text is the tool's own and is not checked here
			// (SECURITY.md, "What mcpauth does not defend against").
			e.sec.SeenErr(pe)
		}
	}
	if e.apiHits.Load() != 0 {
		t.Errorf("RS-19: the upstream API was contacted")
	}
	e.sec.Check(t)
}

// TestOriginAttacksRS: a web page in the user's browser (DNS rebinding,
// cross-site requests) calls the MCP endpoint (TR-01, TR-11). A foreign
// Origin is refused with 403 before authentication, even with a valid
// token, and without disclosing whether the token was good.
func TestOriginAttacksRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	tok := e.token(nil)
	for _, tc := range []struct {
		name, origin string
		auth         bool
		status       int
	}{
		{"TR-01 foreign origin with a valid token", "https://evil.example.com", true, 403},
		{"TR-11 foreign origin without a token (403 before 401)", "https://evil.example.com", false, 403},
		{"TR-01 opaque origin null", "null", true, 403},
		{"TR-01 suffix trick", "https://mcp.example.com.evil.example.com", true, 403},
		{"TR-01 same host, plain http", "http://mcp.example.com", true, 403},
		{"TR-01 same host, another port", "https://mcp.example.com:8443", true, 403},
		{"TR-01 userinfo trick", "https://mcp.example.com@evil.example.com", true, 403},
		{"TR-01 the resource's own origin", "https://mcp.example.com", true, 200},
		{"TR-01 no origin (non-browser client)", "", true, 200},
	} {
		r := rpc{origin: tc.origin}
		if tc.auth {
			r.auth = []string{"Bearer " + tok}
		}
		before := e.served.Load()
		res := e.send(r)
		if res.status != tc.status {
			t.Errorf("%s: status %d; want %d", tc.name, res.status, tc.status)
		}
		if tc.status == 403 {
			// The challenge (RS-25) tells nothing about the token.
			if res.challenge != nil && (res.errorCode() != "" || res.challenge.Value("scope") != "") {
				t.Errorf("%s: a refused origin got token details: %v", tc.name, res.challenge)
			}
			if e.served.Load() != before {
				t.Errorf("%s: the MCP handler ran", tc.name)
			}
			if ev := e.lastEvent(); !refused(ev.Err, reasonOriginNotAllowed) {
				t.Errorf("%s: audit reason %v", tc.name, ev.Err)
			}
		}
	}
	e.sec.Check(t)
}

// TestEveryRequestAuthenticatedRS: after a served request, the next one on
// the same keep-alive connection without a token, or with only a legacy
// Mcp-Session-Id, is refused (RS-20, TR-09).
func TestEveryRequestAuthenticatedRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	tok := e.token(nil)
	if res := e.send(rpc{auth: []string{"Bearer " + tok}}); res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	before := e.served.Load()
	if res := e.send(rpc{}); res.status != http.StatusUnauthorized {
		t.Errorf("RS-20: a request without a token after a served one got %d", res.status)
	}
	if e.served.Load() != before {
		t.Error("RS-20: the handler ran without a token")
	}
	e.sec.Check(t)
}
