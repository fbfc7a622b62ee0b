package authserver

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// FuzzDownstreamExchange: whatever a resource server adds to a token
// exchange of a valid subject token (scope, targets, token types, other
// parameters), the answer is an OAuth error, never a 5xx, or a token for
// the calendar API alone, acting for the user, with no scope beyond what
// the subject token holds and the API accepts.
func FuzzDownstreamExchange(f *testing.F) {
	h := newHarness(f, "", downstreamConfig)
	subject := mcpToken(h, rsResource, "mcp:read cal:read").AccessToken
	for _, seed := range []string{
		"resource=" + url.QueryEscape(calendarAPI),
		"audience=" + url.QueryEscape(calendarAPI) + "&scope=cal:read",
		"resource=" + url.QueryEscape(calendarAPI) + "&scope=cal:read+cal:write+mcp:read",
		"resource=" + url.QueryEscape(mailAPI),
		"resource=HTTPS://CALENDAR.example.com:443/api&scope=%20cal:read%20",
		"resource=" + url.QueryEscape(calendarAPI) + "&requested_token_type=urn:ietf:params:oauth:token-type:id_token",
		"audience=github&resource=x",
		"scope=%00",
	} {
		f.Add(seed)
	}
	base := url.Values{
		"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {subject}, "subject_token_type": {oauthmeta.TokenTypeAccessToken},
	}.Encode()
	f.Fuzz(func(t *testing.T, extra string) {
		req := httptest.NewRequest(http.MethodPost, h.url(pathToken), strings.NewReader(base+"&"+extra))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(rsID, rsSecret)
		rec := httptest.NewRecorder()
		h.as.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			if rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d for %q", rec.Code, extra)
			}
			if _, err := oauthmeta.ParseError(rec.Body.Bytes()); err != nil {
				t.Fatalf("not an OAuth error: %s", rec.Body.Bytes())
			}
			return
		}
		tok, err := oauthmeta.ParseTokenResponse(rec.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		c, err := h.as.tokens.parse(tok.AccessToken, h.clock.Now())
		if err != nil || len(c.Audience) != 1 || c.Audience[0] != calendarAPI || c.Act == nil || c.Act.Subject != rsID ||
			c.ClientID != rsID || c.Subject != defaultSubject || c.Scope != "cal:read" || tok.Scope != c.Scope {
			t.Fatalf("for %q issued %+v (%v)", extra, c, err)
		}
	})
}
