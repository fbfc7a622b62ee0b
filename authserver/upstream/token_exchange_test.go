package upstream

import (
	"net/url"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestTokenExchangeDocumentedErrors holds the token exchange of our access
// tokens to the refusals the README promises, for both targets a server
// with a vault and downstream APIs offers: the upstream token (audience
// "idp") and a downstream API (resource calendarAPI). Each row names the
// README's words; a target given twice, in any spelling, is invalid_target
// (RFC 8693 §2.2.2), not the generic refusal of a repeated parameter.
func TestTokenExchangeDocumentedErrors(t *testing.T) {
	h, _, _ := vaultHarness(t, time.Hour, func(c *testConfig) {
		c.Scopes = append(c.Scopes, "cal:read")
		c.Clients = append(c.Clients,
			authserver.Client{ID: mailRSID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
		c.DownstreamAPIs = []authserver.DownstreamAPI{
			{Resource: calendarAPI, Scopes: []string{"cal:read"}, Clients: map[string]string{rsID: rsResource}},
			{Resource: mailAPI, Scopes: []string{"cal:read"}, Clients: map[string]string{mailRSID: mailRS}},
		}
	})
	login := func(resource string) *oauthmeta.TokenResponse {
		t.Helper()
		b := newBrowser(t, h)
		q, verifier := authParams(publicID, publicCB)
		q.Set("resource", resource)
		q.Set("scope", "mcp:read cal:read")
		res := h.exchange(location(t, b.login(q)).Query().Get("code"), verifier, publicCB, nil)
		if res.tok == nil {
			t.Fatalf("token: %d %s", res.status, res.body)
		}
		return res.tok
	}
	tok := login(rsResource)
	other := login("https://other.example.com/mcp")
	set := func(kv ...string) func(url.Values) {
		return func(f url.Values) {
			for i := 0; i < len(kv); i += 2 {
				f.Set(kv[i], kv[i+1])
			}
		}
	}
	add := func(k, v string) func(url.Values) { return func(f url.Values) { f.Add(k, v) } }
	del := func(k string) func(url.Values) { return func(f url.Values) { f.Del(k) } }
	type target struct {
		name  string
		param string // "audience" or "resource"
		value string
	}
	upstream := target{"upstream", "audience", vaultAud}
	downstream := target{"downstream", "resource", calendarAPI}
	both := []target{upstream, downstream}
	for _, tc := range []struct {
		readme  string // the README's words for the refusal
		targets []target
		subject string
		edit    func(url.Values)
		want    oauthmeta.ErrorCode
		status  int
	}{
		// Success first: the rows below differ from it by one change.
		{"(accepted)", both, tok.AccessToken, nil, "", 200},
		{"no client authentication", both, tok.AccessToken, set("user", "", "client_id", rsID), oauthmeta.CodeInvalidClient, 401},
		{"wrong client authentication", both, tok.AccessToken, set("user", rsID, "pass", "nope"), oauthmeta.CodeInvalidClient, 401},
		{"a client that may exchange nothing", both, tok.AccessToken, set("user", notRSID, "pass", "other-secret"),
			oauthmeta.CodeUnauthorizedClient, 400},
		{"a public client", both, tok.AccessToken, set("user", "", "client_id", publicID), oauthmeta.CodeUnauthorizedClient, 400},
		{"a client that may exchange only for downstream APIs", []target{upstream}, tok.AccessToken,
			set("user", mailRSID, "pass", rsSecret), oauthmeta.CodeInvalidTarget, 400},
		{"a resource this client may not ask for", []target{downstream}, tok.AccessToken,
			set("user", mailRSID, "pass", rsSecret), oauthmeta.CodeInvalidTarget, 400},
		{"a subject token that is not ours", both, "not-a-token", nil, oauthmeta.CodeInvalidGrant, 400},
		{"a subject token whose aud is not the caller's resource", both, other.AccessToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"a refresh token as the subject token", both, tok.RefreshToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"an unknown audience", []target{upstream}, tok.AccessToken, set("audience", "github"), oauthmeta.CodeInvalidTarget, 400},
		{"an unknown resource", []target{downstream}, tok.AccessToken, set("resource", "https://evil.example.com/api"),
			oauthmeta.CodeInvalidTarget, 400},
		{"a second audience: audience twice", both, tok.AccessToken, func(f url.Values) {
			// Moved to "audience" for the downstream target, then repeated.
			for _, v := range f["resource"] {
				f.Add("audience", v)
			}
			f.Del("resource")
			f.Add("audience", f.Get("audience"))
		}, oauthmeta.CodeInvalidTarget, 400},
		{"a second audience: two audiences", []target{upstream}, tok.AccessToken, add("audience", calendarAPI),
			oauthmeta.CodeInvalidTarget, 400},
		{"two targets: resource twice", []target{downstream}, tok.AccessToken, add("resource", calendarAPI),
			oauthmeta.CodeInvalidTarget, 400},
		{"two targets: resource and audience", both, tok.AccessToken, func(f url.Values) {
			// The same value once as each parameter.
			if f.Has("audience") {
				f.Add("resource", f.Get("audience"))
			} else {
				f.Add("audience", f.Get("resource"))
			}
		}, oauthmeta.CodeInvalidTarget, 400},
		{"missing parameters: no target", both, tok.AccessToken, func(f url.Values) { f.Del("audience"); f.Del("resource") },
			oauthmeta.CodeInvalidRequest, 400},
		{"missing parameters: no subject token", both, "", nil, oauthmeta.CodeInvalidRequest, 400},
		{"missing parameters: no subject_token_type", both, tok.AccessToken, del("subject_token_type"),
			oauthmeta.CodeInvalidRequest, 400},
		{"another token type", both, tok.AccessToken, set("subject_token_type", oauthmeta.TokenTypeIDToken), oauthmeta.CodeInvalidRequest, 400},
		{"another requested token type", both, tok.AccessToken,
			set("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token"), oauthmeta.CodeInvalidRequest, 400},
		{"an actor_token", both, tok.AccessToken, set("actor_token", tok.AccessToken), oauthmeta.CodeInvalidRequest, 400},
		{"an invalid_scope for a scope outside those rules", []target{downstream}, tok.AccessToken, set("scope", "mcp:read"),
			oauthmeta.CodeInvalidScope, 400},
		// A repeated parameter other than a target stays invalid_request.
		{"(a repeated subject_token)", both, tok.AccessToken, add("subject_token", tok.AccessToken),
			oauthmeta.CodeInvalidRequest, 400},
	} {
		for _, tg := range tc.targets {
			t.Run(tg.name+"/"+tc.readme, func(t *testing.T) {
				form := url.Values{
					"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {tc.subject},
					"subject_token_type": {oauthmeta.TokenTypeAccessToken}, tg.param: {tg.value},
				}
				user, pass := rsID, rsSecret
				if tc.edit != nil {
					tc.edit(form)
				}
				if form.Has("user") {
					user, pass = form.Get("user"), form.Get("pass")
					form.Del("user")
					form.Del("pass")
				}
				res := h.token(form, user, pass)
				if tc.want == "" {
					if res.tok == nil || res.tok.AccessToken == "" {
						t.Fatalf("got %d %s, want a token", res.status, res.body)
					}
					return
				}
				wantError(t, res, tc.status, tc.want)
			})
		}
	}
}
