package resource_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// A value derived from the verified token — here the header a handler
// forwards — is computed for the first request with a token and reused for
// every later request with the same token.
func ExampleNewDerived() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com",
			Keys: keyset.Static{{ID: "key-1", Public: &key.PublicKey}}}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	computed := 0
	user := resource.NewDerived(func(info *resource.TokenInfo) string {
		computed++
		return info.Subject + " via " + info.ClientID
	})
	h := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.Value(r.Context())
		fmt.Fprint(w, u)
	}))
	tok := exampleToken(key, now, "mcp:tools")
	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}
	fmt.Println("computed", computed, "time(s)")
	// Output:
	// 200 alice via host-app
	// 200 alice via host-app
	// 200 alice via host-app
	// computed 1 time(s)
}
