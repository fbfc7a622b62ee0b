package resource_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const calendarAPI = "https://calendar.example.com/api"

// downstreamAS is an authorization server on loopback that exchanges the
// fixture's token for a token for calendarAPI (scopes cal:read and
// cal:write, refusing cal:write when asked for), and the forms it received.
func downstreamAS(t *testing.T) (*oauthtest.AS, func() []url.Values) {
	as := exchangeAS(t, oauthtest.ASOptions{DenyScopes: []string{"cal:write"}, Exchanges: map[string]oauthtest.ExchangeTarget{
		calendarAPI: {Token: "cal-token", ExpiresIn: 300, Scopes: []string{"cal:read", "cal:write"}}}})
	return as, func() (forms []url.Values) {
		for _, tr := range as.TokenRequests() {
			forms = append(forms, tr.Form)
		}
		return forms
	}
}

// exchangeResourceThrough serves one MCP request carrying token through
// the fixture's middleware to a handler that asks for a calendar token.
func exchangeResourceThrough(f *fixture, ex *resource.Exchanger, token, res string, scopes ...string) (*resource.ExchangedToken, error) {
	var got *resource.ExchangedToken
	var err error
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err = ex.ExchangeResource(r.Context(), res, scopes...)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mcpPost(token, ""))
	if rec.Code != http.StatusOK {
		f.t.Fatalf("middleware: %d", rec.Code)
	}
	return got, err
}

func TestExchangerExchangeResource(t *testing.T) {
	as, forms := downstreamAS(t)
	f, ex, tok := exchangeFixture(t, as, resource.ExchangeConfig{CacheSize: 8})

	got, err := exchangeResourceThrough(f, ex, tok, calendarAPI)
	if err != nil || got.AccessToken != "cal-token" || got.TokenType != "Bearer" ||
		!slices.Equal(got.Scopes, []string{"cal:read", "cal:write"}) || !got.Expiry.Equal(f.clock.Now().Add(300e9)) {
		t.Fatalf("ExchangeResource = %+v, %v", got, err)
	}
	got, err = exchangeResourceThrough(f, ex, tok, calendarAPI, "cal:read")
	if err != nil || !slices.Equal(got.Scopes, []string{"cal:read"}) {
		t.Fatalf("with a scope: %+v, %v", got, err)
	}
	// Each (resource, scope) is cached on its own.
	if _, err := exchangeResourceThrough(f, ex, tok, calendarAPI, "cal:read"); err != nil || as.Hits("/token") != 2 {
		t.Fatalf("cached: %v, %d calls", err, as.Hits("/token"))
	}
	fs := forms()
	want := url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {tok},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"resource":             {calendarAPI}, "scope": {"cal:read"},
	}
	if len(fs) != 2 || fs[0].Has("scope") || !equalForms(fs[1], want) {
		t.Errorf("forms sent: %v", fs)
	}

	_, err = exchangeResourceThrough(f, ex, tok, calendarAPI, "cal:write")
	// A scope the token lacks: the refusal calls for a step-up.
	var se *resource.ScopeError
	if !errors.Is(err, resource.ErrExchange) || !errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidScope}) ||
		resource.ExchangeStatus(err) != http.StatusForbidden || !errors.As(err, &se) || !slices.Equal(se.Missing, []string{"cal:write"}) {
		t.Errorf("refused scope: %v", err)
	}
	for _, tc := range []struct {
		name, res string
		scopes    []string
	}{
		{"relative resource", "/api", nil},
		{"resource with fragment", calendarAPI + "#x", nil},
		{"invalid scope token", calendarAPI, []string{"a b"}},
		{"empty scope token", calendarAPI, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := as.Hits("/token")
			if _, err := exchangeResourceThrough(f, ex, tok, tc.res, tc.scopes...); !errors.Is(err, resource.ErrExchange) || as.Hits("/token") != n {
				t.Errorf("ExchangeResource = %v after %d calls", err, as.Hits("/token")-n)
			}
		})
	}
	if _, err := ex.ExchangeResource(context.Background(), calendarAPI); !errors.Is(err, resource.ErrNoToken) {
		t.Errorf("without a verified request: %v", err)
	}
}

func equalForms(a, b url.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
