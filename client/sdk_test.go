package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestSDKAdapter: the official Go SDK's streamable transport, authorized
// through OAuthHandler, works for both protocol revisions and reuses the
// token across sessions.
func TestSDKAdapter(t *testing.T) {
	t.Parallel()
	for _, pv := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(pv, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{ChallengeScope: []string{"mcp:basic"}}, nil)
			for range 2 {
				cs, err := e.session(ctx, pv)
				if err != nil {
					t.Fatal(err)
				}
				if got := cs.InitializeResult().ProtocolVersion; got != pv {
					t.Errorf("negotiated %s, want %s", got, pv)
				}
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if err := callTool(ctx, cs, "echo"); err != nil {
					t.Fatal(err)
				}
				cs.Close()
			}
			if n := len(e.as.Authorizations()); n != 1 {
				t.Errorf("authorizations = %d, want 1 for two sessions", n)
			}
			e.noLeak()
		})
	}
}

// TestSDKAdapterTokenSource: no token means no header (the 401 then
// starts the flow); a stored token is handed over as Bearer.
func TestSDKAdapterTokenSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.ASOptions{}, oauthtest.ResourceOptions{}, nil)
	h := mustHandler(t, e.c, e.rs.MCPURL())
	ts, err := h.TokenSource(ctx)
	if err != nil || ts != nil {
		t.Fatalf("TokenSource before login = %v, %v; want nil, nil", ts, err)
	}
	if err := e.c.Login(ctx, e.rs.MCPURL()); err != nil {
		t.Fatal(err)
	}
	ts, err = h.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil || tok.AccessToken == "" || tok.Type() != "Bearer" {
		t.Fatalf("token = %v, %v", tok, err)
	}
}

// TestCL15SDKAttemptBudget: the adapter counts authorizations per
// operation over the step-up window and refuses a fourth; other
// operations have their own budget; the window resets it.
func TestCL15SDKAttemptBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.ASOptions{DenyScopes: []string{"admin"}}, oauthtest.ResourceOptions{}, nil)
	h := mustHandler(t, e.c, e.rs.MCPURL())
	forbidden := func() *http.Response {
		return &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
			"Www-Authenticate": {`Bearer error="insufficient_scope", scope="read admin"`}}}
	}
	req := func(tool string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, e.rs.MCPURL(), nil)
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Mcp-Name", tool)
		if st, _ := e.c.tokenState(ctx, e.rs.MCPURL()); st != nil && st.tok != nil {
			r.Header.Set("Authorization", "Bearer "+st.tok.AccessToken)
		}
		return r
	}
	for i := range MaxAuthorizationAttempts {
		if err := h.Authorize(ctx, req("write"), forbidden()); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if err := h.Authorize(ctx, req("write"), forbidden()); !errors.Is(err, errAttemptLimit) {
		t.Fatalf("CL-15: attempt %d: err = %v, want errAttemptLimit", MaxAuthorizationAttempts+1, err)
	}
	if err := h.Authorize(ctx, req("other"), forbidden()); err != nil {
		t.Fatalf("another operation shares the budget: %v", err)
	}
	e.clock.Advance(DefaultStepUpWindow + time.Second)
	if err := h.Authorize(ctx, req("write"), forbidden()); err != nil {
		t.Fatalf("the window did not reset the budget: %v", err)
	}
	if n := len(e.as.Authorizations()); n != MaxAuthorizationAttempts+2 {
		t.Errorf("authorizations = %d", n)
	}
	plain := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{}}
	if err := h.Authorize(ctx, req("x"), plain); !errors.Is(err, errForbiddenStatus) {
		t.Errorf("403 without insufficient_scope: err = %v, want ErrForbidden", err)
	}
}

// TestSDKAdapterScopeRetryLimit mirrors the conformance scenario: the
// resource refuses every authorized request with 403; the session fails
// after at most MaxAuthorizationAttempts authorizations.
func TestSDKAdapterScopeRetryLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, deny := range []bool{false, true} {
		e := newEnv(t, oauthtest.ASOptions{DenyScopes: map[bool][]string{true: {"admin"}}[deny]}, oauthtest.ResourceOptions{AlwaysForbid: true}, nil)
		for range 5 {
			if cs, err := e.session(ctx, "2026-07-28"); err == nil {
				cs.Close()
				t.Fatal("session succeeded against a resource that always refuses")
			}
		}
		// Per operation (server/discover, then the initialize fallback) at
		// most MaxAuthorizationAttempts; futile ones are not started.
		if n := len(e.as.Authorizations()); n > 2*MaxAuthorizationAttempts || (!deny && n > 2) {
			t.Errorf("CL-15 (deny %v): %d authorizations over 5 sessions", deny, n)
		}
	}
}
