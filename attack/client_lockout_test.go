package attack

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/pkce"
)

// TestClientLockoutAS: strangers on four other addresses (127.0.0.2–5)
// flood the token, introspection and revocation endpoints with junk
// requests naming the public client "app" and the confidential client
// "rs" (junk codes and refresh tokens, wrong secrets, junk tokens to
// revoke) until every one of them is throttled. The authorization server
// runs with its default rate limits. The clients themselves, on
// 127.0.0.1, are not locked out: app redeems its code, rs introspects the
// token, app revokes its refresh token.
func TestClientLockoutAS(t *testing.T) {
	t.Parallel()
	a := newASAttacker(t, func(_ *vnet, c *authserver.Config) { c.RateLimit = authserver.RateLimit{} })
	a.sec.Add("wrong-secret-0123456789")
	junk := []struct {
		path  string
		form  url.Values
		basic []string
	}{
		{"/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {"app"}, "code": {"junk-code"},
			"redirect_uri": {appRedirect}, "code_verifier": {pkce.GenerateVerifier()}}, nil},
		{"/token", url.Values{"grant_type": {"refresh_token"}, "client_id": {"app"}, "refresh_token": {"junk-refresh"}}, nil},
		{"/token", url.Values{"grant_type": {"client_credentials"}}, []string{"rs", "wrong-secret-0123456789"}},
		{"/introspect", url.Values{"token": {"junk-token"}}, []string{"rs", "wrong-secret-0123456789"}},
		{"/introspect", url.Values{"token": {"junk-token"}, "client_id": {"app"}}, nil},
		{"/revoke", url.Values{"token": {"junk-token"}, "client_id": {"app"}}, nil},
		{"/revoke", url.Values{"token": {"junk-token"}}, []string{"rs", "wrong-secret-0123456789"}},
	}
	for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		stranger := *a
		stranger.hc = a.n.ClientFrom(oauthtest.SourceDialer(t, src))
		throttled := 0
		for i := range 40 {
			j := junk[i%len(junk)]
			status, m := stranger.post(j.path, j.form, j.basic...)
			switch {
			case status == http.StatusTooManyRequests:
				throttled++
			case status == http.StatusOK && j.path != "/revoke":
				t.Fatalf("%s: junk request to %s succeeded: %v", src, j.path, m)
			}
		}
		if throttled == 0 {
			t.Fatalf("%s: 40 junk requests and never throttled; the flood proves nothing", src)
		}
		stranger.hc.CloseIdleConnections()
	}

	v := pkce.GenerateVerifier()
	status, tok := a.redeem("app", a.code("app", appRedirect, v), appRedirect, v)
	if status != http.StatusOK {
		t.Fatalf("app's own code redemption after the flood: %d %v", status, tok)
	}
	if !a.active(str(tok, "access_token")) { // rs authenticates; a.active fails the test on any non-200
		t.Fatal("rs's introspection after the flood: token inactive")
	}
	if status, m := a.post("/revoke", url.Values{"token": {str(tok, "refresh_token")}, "client_id": {"app"}}); status != http.StatusOK {
		t.Fatalf("app's own revocation after the flood: %d %v", status, m)
	}
	if status, m := a.refresh("app", str(tok, "refresh_token")); status != http.StatusBadRequest || str(m, "error") != "invalid_grant" {
		t.Fatalf("refresh after revocation: %d %v", status, m)
	}
	a.sec.Check(t)
}
