package authserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestFormParsedInFront: a handler in front of the server that parsed the
// form already (r.ParseForm or r.FormValue, which consume the body) gets
// the same answers from the token endpoint as a request that reaches it
// untouched: the parameters it read are the ones the server checks,
// repeated ones included.
func TestFormParsedInFront(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", nil)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		h.as.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	via := *h
	via.issuer = front.URL
	for _, tc := range []struct {
		name       string
		form       url.Values
		user, pass string
	}{
		{"client credentials", url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp:read"}}, basicID, basicSecret},
		{"repeated scope", url.Values{"grant_type": {"client_credentials"}, "scope": {"mcp:read", "mcp:write"}}, basicID, basicSecret},
		{"unknown code", url.Values{"grant_type": {"authorization_code"}, "code": {"nope"}, "client_id": {publicID},
			"redirect_uri": {publicCB}, "code_verifier": {"v"}}, "", ""},
		{"no grant type", url.Values{"client_id": {publicID}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, parsed := h.token(tc.form, tc.user, tc.pass), via.token(tc.form, tc.user, tc.pass)
			if direct.status != parsed.status || (direct.err == nil) != (parsed.err == nil) {
				t.Fatalf("direct %d %s, through a parsing handler %d %s", direct.status, direct.body, parsed.status, parsed.body)
			}
			if direct.err != nil && (direct.err.Code != parsed.err.Code || direct.err.Description != parsed.err.Description) {
				t.Errorf("direct %+v, through a parsing handler %+v", direct.err, parsed.err)
			}
			if direct.status == http.StatusBadRequest && direct.err == nil {
				t.Errorf("400 without an error: %s", direct.body)
			}
		})
	}
}
