package resource_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

func TestDenyExchange(t *testing.T) {
	oauthAnswer := func(status int, body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	for _, tc := range []struct {
		name        string
		answer      func(http.ResponseWriter)
		down        bool // the token endpoint is not listening
		status      int
		challenge   string   // in WWW-Authenticate
		unavailable bool     // the error wraps ErrExchangeUnavailable
		scopes      []string // non-nil: ExchangeResource for a downstream API with these scopes
	}{
		{name: "invalid_grant", answer: oauthAnswer(http.StatusBadRequest, `{"error":"invalid_grant","error_description":"revoked"}`),
			status: http.StatusUnauthorized, challenge: `Bearer error="invalid_token"`},
		{name: "temporarily_unavailable", answer: oauthAnswer(http.StatusBadRequest, `{"error":"temporarily_unavailable"}`),
			status: http.StatusServiceUnavailable, unavailable: true},
		{name: "503 without a body", answer: oauthAnswer(http.StatusServiceUnavailable, ``),
			status: http.StatusServiceUnavailable, unavailable: true},
		{name: "unreachable", down: true, status: http.StatusServiceUnavailable, unavailable: true},
		{name: "invalid_client", answer: oauthAnswer(http.StatusUnauthorized, `{"error":"invalid_client","error_description":"bad secret"}`),
			status: http.StatusBadGateway},
		{name: "invalid_target", answer: oauthAnswer(http.StatusBadRequest, `{"error":"invalid_target"}`),
			status: http.StatusBadGateway},
		{name: "500", answer: oauthAnswer(http.StatusInternalServerError, `oops`), status: http.StatusBadGateway},
		{name: "malformed", answer: oauthAnswer(http.StatusOK, `{"access_token":"x"}`), status: http.StatusBadGateway},
		// The token carries "mcp:tools files:read": a refused scope it
		// lacks calls for a step-up to all of them and the API's.
		{name: "invalid_scope for a scope the token lacks", answer: oauthAnswer(http.StatusBadRequest, `{"error":"invalid_scope"}`),
			scopes: []string{"files:read", "calendar:write"}, status: http.StatusForbidden,
			challenge: `scope="mcp:tools files:read calendar:write"`},
		// A refusal of scopes the token carries: a new authorization would
		// not help.
		{name: "invalid_scope for scopes the token has", answer: oauthAnswer(http.StatusBadRequest, `{"error":"invalid_scope"}`),
			scopes: []string{"files:read"}, status: http.StatusBadGateway},
		{name: "invalid_target for a downstream API", answer: oauthAnswer(http.StatusBadRequest, `{"error":"invalid_target"}`),
			scopes: []string{"calendar:write"}, status: http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := exchangeAS(t, oauthtest.ASOptions{})
			if tc.answer != nil {
				answerTokens(as, tc.answer)
			}
			f, ex, tok := exchangeFixture(t, as, resource.ExchangeConfig{})
			if tc.down {
				as.Close()
			}
			var exErr error
			var denied int
			h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.scopes != nil {
					_, exErr = ex.ExchangeResource(r.Context(), "https://api.example/v1", tc.scopes...)
				} else {
					_, exErr = ex.Exchange(r.Context(), "github")
				}
				if exErr != nil {
					denied = f.v.DenyExchange(w, r, exErr)
				}
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, mcpPost(tok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if rec.Code != tc.status || denied != tc.status || resource.ExchangeStatus(exErr) != tc.status {
				t.Fatalf("status %d (DenyExchange %d, ExchangeStatus %d), want %d; err %v",
					rec.Code, denied, resource.ExchangeStatus(exErr), tc.status, exErr)
			}
			if got := errors.Is(exErr, resource.ErrExchangeUnavailable); got != tc.unavailable {
				t.Errorf("ErrExchangeUnavailable %v, want %v: %v", got, tc.unavailable, exErr)
			}
			chal := strings.Join(rec.Header().Values("WWW-Authenticate"), ", ")
			if tc.challenge != "" && (!strings.Contains(chal, tc.challenge) || !strings.Contains(chal, "resource_metadata=")) {
				t.Errorf("WWW-Authenticate %q, want %s", chal, tc.challenge)
			}
			if tc.challenge == "" && chal != "" {
				t.Errorf("WWW-Authenticate %q on a %d", chal, tc.status)
			}
			body := rec.Body.String()
			if _, err := oauthmeta.ParseError(rec.Body.Bytes()); err != nil {
				t.Errorf("body %q: %v", body, err)
			}
			for _, secret := range []string{tok, "revoked", "bad secret", "127.0.0.1"} {
				if strings.Contains(body, secret) || strings.Contains(chal, secret) {
					t.Errorf("the answer shows %q: %s %s", secret, chal, body)
				}
			}
			if rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", rec.Header().Get("Cache-Control"))
			}
		})
	}
	if s := resource.ExchangeStatus(nil); s != http.StatusOK {
		t.Errorf("ExchangeStatus(nil) = %d", s)
	}
}
