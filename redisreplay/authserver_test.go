package redisreplay_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/testdb"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/redisreplay"
)

// TestAuthServerClientAssertionReplay: two authorization server replicas
// of one issuer share the Redis replay store. A private_key_jwt client
// assertion accepted at one is refused (invalid_client) at the other; with
// Redis stopped an assertion is refused with 503 temporarily_unavailable.
func TestAuthServerClientAssertionReplay(t *testing.T) {
	rd := testdb.StartRedis(t)
	c, err := redisreplay.NewClient(rd.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	const issuer = "http://127.0.0.1:9"
	var replicas []*httptest.Server
	for range 2 {
		as, err := authserver.New(authserver.Config{
			Issuer: issuer, InsecureAllowHTTPLoopback: true, Scopes: []string{"mcp:tools"},
			Clients: []authserver.Client{{ID: "svc", JWKS: set, GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}}},
			Replay:  redisreplay.New(c, "mcpauth:as:"+issuer+":"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = as.Close() })
		srv := httptest.NewServer(as)
		t.Cleanup(srv.Close)
		replicas = append(replicas, srv)
	}
	signer, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "svc", Key: key, KeyID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	token := func(srv *httptest.Server, assertion string) (int, string) {
		form := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}, "client_id": {"svc"},
			"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {assertion}}
		resp, err := srv.Client().Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	assertion, err := signer.Sign(issuer)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := token(replicas[0], assertion); code != http.StatusOK {
		t.Fatalf("assertion at replica A: %d %s", code, body)
	}
	if code, body := token(replicas[1], assertion); code != http.StatusUnauthorized || !strings.Contains(body, "invalid_client") {
		t.Fatalf("the same assertion at replica B: %d %s; want 401 invalid_client", code, body)
	}
	rd.Stop()
	fresh, _ := signer.Sign(issuer)
	if code, body := token(replicas[1], fresh); code != http.StatusServiceUnavailable || !strings.Contains(body, "temporarily_unavailable") ||
		strings.Contains(strings.ToLower(body), "redis") {
		t.Fatalf("with Redis stopped: %d %s; want 503 temporarily_unavailable without detail", code, body)
	}
}
