package redislimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

type resourceFixture struct {
	t   *testing.T
	key *oauthtest.Key
	h   http.Handler
}

func newResourceFixture(t *testing.T, rl *resource.RateLimit) *resourceFixture {
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	v, err := resource.New(resource.Config{
		Resource:  "https://mcp.example.com/mcp",
		Issuers:   []resource.Issuer{{Issuer: "https://as.example.com", Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
		RateLimit: rl,
		Now:       func() time.Time { return t0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return &resourceFixture{t: t, key: key, h: v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))}
}

func (f *resourceFixture) token(sub string) string {
	return f.key.Mint(f.t, oauthtest.AccessToken{Issuer: "https://as.example.com", Subject: sub, ClientID: "c",
		Audience: []string{"https://mcp.example.com/mcp"}, IssuedAt: t0, Expiry: t0.Add(time.Hour)})
}

func (f *resourceFixture) status(tok string) int {
	req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec.Code
}
