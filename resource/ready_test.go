package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// A readiness probe asks Ready whether tokens of every issuer can be
// verified; with keys given in the configuration they always can.
func ExampleVerifier_Ready() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com",
			Keys: keyset.Static{{ID: "key-1", Public: &key.PublicKey}}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	fmt.Println(v.Ready(context.Background()))
	// Output: <nil>
}

// TestReady: Ready fetches each issuer's key set once and names the
// issuer whose keys cannot be had.
func TestReady(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fetches := 0
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	}))
	defer jwks.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	newVerifier := func(issuers ...resource.Issuer) *resource.Verifier {
		v, err := resource.New(resource.Config{Resource: "http://127.0.0.1:1/mcp", Issuers: issuers, InsecureAllowHTTPLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = v.Close() })
		return v
	}
	good := resource.Issuer{Issuer: "http://127.0.0.1:2/good", JWKSURI: jwks.URL + "/jwks"}
	v := newVerifier(good)
	for range 3 {
		if err := v.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if fetches != 1 {
		t.Errorf("%d fetches for three calls, want 1", fetches)
	}
	v = newVerifier(good, resource.Issuer{Issuer: "http://127.0.0.1:2/down", JWKSURI: dead.URL + "/jwks"})
	err := v.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "issuer http://127.0.0.1:2/down") || strings.Contains(err.Error(), "/good") {
		t.Fatalf("Ready = %v, want the down issuer named", err)
	}
}
