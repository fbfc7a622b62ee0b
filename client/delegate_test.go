package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestDelegationConfig: incomplete configurations are ErrConfig.
func TestDelegationConfig(t *testing.T) {
	t.Parallel()
	parent := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "p"})
	actor := client.ActorJWT(func(context.Context) (string, error) { return "jwt", nil })
	for name, cfg := range map[string]client.DelegationConfig{
		"no parent":         {TokenEndpoint: "https://as.example.com/token", Actor: actor},
		"no actor, no key":  {TokenEndpoint: "https://as.example.com/token", Parent: parent},
		"negative lifetime": {TokenEndpoint: "https://as.example.com/token", Parent: parent, Actor: actor, Lifetime: -time.Second},
		"plain http":        {TokenEndpoint: "http://as.example.com/token", Parent: parent, Actor: actor},
		"no endpoint":       {Parent: parent, Actor: actor},
	} {
		if _, err := client.NewDelegation(cfg); !errors.Is(err, client.ErrConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := client.ActorAssertion(client.ActorAssertionConfig{ClientID: "a"}); !errors.Is(err, client.ErrConfig) {
		t.Errorf("ActorAssertion without issuer and key: %v", err)
	}
}

// TestDelegationCacheAndNonce: a derived token is reused until shortly
// before it expires; a server asking for a DPoP nonce gets one retry
// with it; the request carries the RFC 8693 parameters.
func TestDelegationCacheAndNonce(t *testing.T) {
	t.Parallel()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	key, err := dpop.NewProver(dpop.ProverConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_ = r.ParseForm()
		if r.PostForm.Get("actor_token_type") != oauthmeta.TokenTypeDPoPJKT || r.PostForm.Get("actor_token") != key.JKT() ||
			r.PostForm.Get("subject_token") != "parent" || r.PostForm.Get("expires_in") != "60" || r.PostForm.Get("scope") != "mcp:read" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		var p struct {
			Nonce string `json:"nonce"`
		}
		err := jwtverify.UnsafeClaimsWithoutVerification(r.Header.Get("DPoP"), &p)
		w.Header().Set("Content-Type", "application/json")
		if err != nil || p.Nonce != "n1" {
			w.Header().Set("DPoP-Nonce", "n1")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"use_dpop_nonce"}`))
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"derived","token_type":"DPoP","expires_in":60,"issued_token_type":"` + oauthmeta.TokenTypeAccessToken + `"}`))
	}))
	t.Cleanup(srv.Close)
	d, err := client.NewDelegation(client.DelegationConfig{TokenEndpoint: srv.URL + "/token", InsecureAllowHTTPLoopback: true,
		Parent: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "parent"}), DPoP: key, Scopes: []string{"mcp:read"},
		Lifetime: time.Minute, Now: clock.Now, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tok, err := d.Token(context.Background())
		if err != nil || tok.AccessToken != "derived" || tok.TokenType != dpop.TokenType {
			t.Fatalf("token %+v, err %v", tok, err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d requests, want 2 (one nonce retry, then cached)", n)
	}
	clock.Advance(55 * time.Second)
	if _, err := d.Token(context.Background()); err != nil || calls.Load() < 3 {
		t.Fatalf("a token about to expire was not replaced: %v, %d requests", err, calls.Load())
	}
}
