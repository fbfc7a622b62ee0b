package resource_test

import (
	"context"
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

// exchangeAS is an authorization server on loopback whose client "rs"
// exchanges the fixture's token for "gh-token" (audience "github"), or for
// what o.Exchanges lists.
func exchangeAS(t *testing.T, o oauthtest.ASOptions) *oauthtest.AS {
	o.PreRegistered = []oauthtest.RegisteredClient{{ID: "rs", Secret: "rs-secret", Method: "client_secret_basic"}}
	if o.Exchanges == nil {
		o.Exchanges = map[string]oauthtest.ExchangeTarget{"github": {Token: "gh-token", ExpiresIn: 600}}
	}
	return oauthtest.NewAS(t, o)
}

// answerTokens makes as answer every token request with answer.
func answerTokens(as *oauthtest.AS, answer func(http.ResponseWriter)) {
	as.Update(func(o *oauthtest.ASOptions) {
		o.Faults = map[string]http.HandlerFunc{"/token": func(w http.ResponseWriter, _ *http.Request) { answer(w) }}
	})
}

// exchangeThrough serves one MCP request carrying token through the
// fixture's middleware to a handler that exchanges it.
func exchangeThrough(f *fixture, ex *resource.Exchanger, token string) (*resource.ExchangedToken, error) {
	var got *resource.ExchangedToken
	var err error
	h := f.v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err = ex.Exchange(r.Context(), "github")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, mcpPost(token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if rec.Code != http.StatusOK {
		f.t.Fatalf("middleware: %d", rec.Code)
	}
	return got, err
}

func exchangeFixture(t *testing.T, as *oauthtest.AS, cfg resource.ExchangeConfig) (*fixture, *resource.Exchanger, string) {
	f := newFixture(t, func(c *resource.Config) {
		c.Issuers[0].Issuer = as.URL
		c.InsecureAllowHTTPLoopback = true
	})
	if cfg.TokenEndpoint == "" {
		cfg.TokenEndpoint = as.URL + "/token"
	}
	cfg.ClientID, cfg.ClientSecret, cfg.InsecureAllowHTTPLoopback, cfg.Now = "rs", "rs-secret", true, f.clock.Now
	ex, err := resource.NewExchanger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok := f.token(func(c *oauthtest.AccessToken) { c.Issuer = as.URL })
	as.Update(func(o *oauthtest.ASOptions) { o.SubjectTokens = []string{tok} })
	return f, ex, tok
}

func TestExchangerExchange(t *testing.T) {
	as := exchangeAS(t, oauthtest.ASOptions{})
	f, ex, tok := exchangeFixture(t, as, resource.ExchangeConfig{CacheSize: 8})
	got, err := exchangeThrough(f, ex, tok)
	if err != nil || got.AccessToken != "gh-token" || got.TokenType != "Bearer" || !got.Expiry.Equal(f.clock.Now().Add(600e9)) {
		t.Fatalf("Exchange = %+v, %v", got, err)
	}
	if _, err := exchangeThrough(f, ex, tok); err != nil || as.Hits("/token") != 1 {
		t.Fatalf("cached exchange: %v, %d calls", err, as.Hits("/token"))
	}
	// RFC 8693 names the target by audience; the form is not printed, it
	// holds the subject token and the client's credentials.
	if tr := as.TokenRequests(); len(tr) != 1 || tr[0].Form.Get("audience") != "github" || tr[0].Form.Has("resource") {
		t.Fatalf("%d token requests; want one with audience=github and no resource", len(tr))
	}
	f.clock.Advance(2 * 60e9) // past the cache TTL
	if _, err := exchangeThrough(f, ex, tok); err != nil || as.Hits("/token") != 2 {
		t.Fatalf("after the cache TTL: %v, %d calls", err, as.Hits("/token"))
	}
	if _, err := ex.Exchange(context.Background(), "github"); !errors.Is(err, resource.ErrExchange) || !errors.Is(err, resource.ErrNoToken) {
		t.Errorf("without a verified request: %v", err)
	}
}

func TestExchangerRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(http.ResponseWriter)
		endpoint func(as, other *oauthtest.AS) string
		want     error
		calls    int
	}{
		{name: "invalid_grant", answer: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"revoked"}`)
		}, want: &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}, calls: 1},
		{name: "redirect elsewhere", answer: nil, endpoint: nil, want: resource.ErrExchange, calls: 1},
		{name: "oversized", answer: func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"access_token":"`+strings.Repeat("a", 70<<10)+`","token_type":"Bearer"}`)
		}, want: resource.ErrExchange, calls: 1},
		{name: "no token type", answer: func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"access_token":"x"}`)
		}, want: resource.ErrExchange, calls: 1},
		{name: "another origin than the issuer", endpoint: func(_, other *oauthtest.AS) string { return other.URL + "/token" },
			want: resource.ErrExchange, calls: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, other := exchangeAS(t, oauthtest.ASOptions{}), exchangeAS(t, oauthtest.ASOptions{})
			if tc.name == "redirect elsewhere" {
				tc.answer = func(w http.ResponseWriter) {
					w.Header().Set("Location", other.URL+"/token")
					w.WriteHeader(http.StatusTemporaryRedirect)
				}
			}
			if tc.answer != nil {
				answerTokens(as, tc.answer)
			}
			cfg := resource.ExchangeConfig{}
			if tc.endpoint != nil {
				cfg.TokenEndpoint = tc.endpoint(as, other)
			}
			f, ex, tok := exchangeFixture(t, as, cfg)
			got, err := exchangeThrough(f, ex, tok)
			if got != nil || !errors.Is(err, resource.ErrExchange) || !errors.Is(err, tc.want) {
				t.Fatalf("Exchange = %+v, %v; want %v", got, err, tc.want)
			}
			if strings.Contains(err.Error(), tok) {
				t.Error("the error shows the access token")
			}
			if n := as.Hits("/token") + other.Hits("/token"); n != tc.calls {
				t.Errorf("%d token endpoint calls, want %d", n, tc.calls)
			}
		})
	}
}

func TestNewExchangerConfig(t *testing.T) {
	for _, cfg := range []resource.ExchangeConfig{
		{TokenEndpoint: "http://as.example.com/token", ClientID: "rs", ClientSecret: "s"},
		{TokenEndpoint: "https://as.example.com/token", ClientID: "rs"},
		{TokenEndpoint: "https://as.example.com/token", ClientID: "rs", ClientSecret: "s", CacheSize: -1},
	} {
		if _, err := resource.NewExchanger(cfg); !errors.Is(err, resource.ErrInvalidConfig) {
			t.Errorf("NewExchanger(%+v) = %v", cfg, err)
		}
	}
}
