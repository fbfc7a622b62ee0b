package authserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mcpauth/mcpauth/authserver"
)

// Start an authorization server for a test: the issuer is the test
// server's URL, so the listener is created first.
func ExampleNew() {
	srv := httptest.NewUnstartedServer(nil)
	as, err := authserver.New(authserver.Config{
		Issuer:                    "http://" + srv.Listener.Addr().String(),
		InsecureAllowHTTPLoopback: true,
		Consent:                   authserver.ConsentAuto,
		Scopes:                    []string{"mcp:read"},
		Clients:                   []authserver.Client{{ID: "app", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
	})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = as
	srv.Start()
	defer srv.Close()
	defer as.Close()

	m := as.Metadata()
	fmt.Println(m.CodeChallengeMethodsSupported, m.AuthorizationResponseISSParameterSupported)
	// Output: [S256] true
}

// Rotate the signing key: the new key is published at once and signs after
// KeyPrePublish.
func ExampleServer_RotateSigningKey() {
	as, err := authserver.New(authserver.Config{Issuer: "https://as.example.com"})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	if err := as.RotateSigningKey(context.Background()); err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	as.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://as.example.com/jwks.json", nil))
	var set struct{ Keys []json.RawMessage }
	_ = json.Unmarshal(rec.Body.Bytes(), &set)
	fmt.Println(len(set.Keys))
	// Output: 2
}
