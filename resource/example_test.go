package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/resource"
)

// Protecting an MCP server built with the official Go SDK takes three
// lines: New, defer Close, Mount. Keys are discovered from the issuer's
// metadata on first use.
func Example_goSDK() {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	mux := http.NewServeMux()

	v, err := resource.New(resource.Config{Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	v.Mount(mux, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))

	// A request without a token is challenged, pointing at the metadata.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", strings.NewReader("{}")))
	fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))
	// Output:
	// 401 Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}

func ExampleNew() {
	v, err := resource.New(resource.Config{
		Resource:        "https://mcp.example.com/mcp",
		Issuers:         []resource.Issuer{{Issuer: "https://auth.example.com"}},
		ScopesSupported: []string{"mcp:tools", "files:read", "files:write"},
		Policy:          &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"write_file": {"files:write"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	fmt.Println(v.MetadataURL())
	// Output:
	// https://mcp.example.com/.well-known/oauth-protected-resource/mcp
}

// exampleKey signs example tokens; an authorization server does this.
func exampleToken(key *ecdsa.PrivateKey, now time.Time, scope string) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "key-1"))
	if err != nil {
		log.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(map[string]any{
		"iss": "https://auth.example.com", "aud": "https://mcp.example.com/mcp", "sub": "alice",
		"client_id": "host-app", "scope": scope, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	return tok
}

func ExampleVerifier_Verify() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com",
			Keys: resource.StaticKeys{{ID: "key-1", Public: &key.PublicKey}}}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	info, err := v.Verify(context.Background(), exampleToken(key, now, "mcp:tools"))
	fmt.Println(info.Subject, info.ClientID, info.Scopes, err)

	now = now.Add(2 * time.Hour)
	_, err = v.Verify(context.Background(), exampleToken(key, now.Add(-2*time.Hour), "mcp:tools"))
	fmt.Println(errors.Is(err, resource.ErrExpired), errors.Is(err, resource.ErrInvalidToken))
	// Output:
	// alice host-app [mcp:tools] <nil>
	// true true
}

func ExampleVerifier_Middleware() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v, _ := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com",
			Keys: resource.StaticKeys{{ID: "key-1", Public: &key.PublicKey}}}},
		Policy: &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{"write_file": {"files:write"}}},
		Now:    func() time.Time { return now },
	})
	h := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("handler: Authorization =", r.Header.Get("Authorization") != "")
	}))
	call := func(scope, tool string) {
		req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`"}}`))
		req.Header.Set("Authorization", "Bearer "+exampleToken(key, now, scope))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Values("WWW-Authenticate"))
	}
	call("mcp:tools", "read_file")
	call("mcp:tools", "write_file")
	// Output:
	// handler: Authorization = false
	// 200 []
	// 403 [Bearer error="insufficient_scope", error_description="the operation needs more scopes", scope="mcp:tools files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"]
}

func ExampleTokenInfoFromContext() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := resource.TokenInfoFromContext(r.Context())
		fmt.Fprintf(w, "hello %s from %s", info.Subject, info.ClientID)
	})
	// In production the middleware fills the context; tests can do it too.
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req = req.WithContext(resource.ContextWithTokenInfo(req.Context(), &resource.TokenInfo{Subject: "alice", ClientID: "host-app"}))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println(rec.Body.String())
	// Output:
	// hello alice from host-app
}

func ExampleVerifier_GuardTransport() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	v, _ := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers: []resource.Issuer{{Issuer: "https://auth.example.com",
			Keys: resource.StaticKeys{{ID: "key-1", Public: &key.PublicKey}}}},
		Now: func() time.Time { return now },
	})
	// Tools call upstream APIs through a guarded client.
	upstream := &http.Client{Transport: v.GuardTransport(nil), Timeout: 10 * time.Second}

	inbound := exampleToken(key, now, "mcp:tools")
	h := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A tool that tries to reuse the caller's token upstream.
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "https://api.example.com/v1/files", nil)
		req.Header.Set("Authorization", "Bearer "+inbound)
		_, err := upstream.Do(req)
		var pe *resource.PassthroughError
		fmt.Println(errors.As(err, &pe), pe.Where)
	}))
	req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+inbound)
	h.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// true header Authorization
}

func ExampleParsePolicy() {
	p, err := resource.ParsePolicy([]byte(`{"default": ["mcp:tools"],
	 "methods": {"tools/list": ["mcp:read"]},
	 "tools": {"write_file": ["files:write"]},
	 "resources": {"file:///secret": ["files:admin"]},
	 "prompts": {"deploy": ["ops:deploy"]},
	 "implies": {"admin": ["files:write", "files:read", "mcp:tools"]}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Tools["write_file"], p.Implies["admin"])
	_, err = resource.ParsePolicy([]byte(`{"tool": {"write_file": ["files:write"]}}`))
	fmt.Println(errors.Is(err, resource.ErrInvalidConfig))
	// Output:
	// [files:write] [files:write files:read mcp:tools]
	// true
}

func ExampleNewRemoteKeys() {
	keys, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{
		Issuer:          "https://auth.example.com",
		RefetchInterval: 30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer keys.Close()
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com", Keys: keys}},
	})
	fmt.Println(v != nil, err)
	// Output:
	// true <nil>
}

func ExampleVerifier_MetadataHandler() {
	v, _ := resource.New(resource.Config{
		Resource:        "https://mcp.example.com/mcp",
		Issuers:         []resource.Issuer{{Issuer: "https://auth.example.com"}},
		ScopesSupported: []string{"mcp:tools"},
	})
	defer v.Close()
	rec := httptest.NewRecorder()
	v.MetadataHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, v.MetadataURL(), nil))
	fmt.Println(v.MetadataPath())
	fmt.Println(rec.Body.String())
	// Output:
	// /.well-known/oauth-protected-resource/mcp
	// {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]}
}

// Handlers tailor results to the caller's scopes, implications included,
// for example to list only the tools a token may call.
func ExampleVerifier_Grants() {
	policy, _ := resource.ParsePolicy([]byte(`{"tools": {"write_file": ["files:write"]},
	 "implies": {"admin": ["files:write"]}}`))
	v, _ := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com"}},
		Policy:   policy,
	})
	defer v.Close()
	admin := &resource.TokenInfo{Scopes: []string{"admin"}}
	reader := &resource.TokenInfo{Scopes: []string{"files:read"}}
	fmt.Println(v.Grants(admin, "files:write"), v.Grants(reader, "files:write"))
	// Output:
	// true false
}

// With DPoP required (RFC 9449), only tokens bound to the client's key
// ("cnf": {"jkt": …}) are accepted, each request with a fresh proof in its
// DPoP header; the challenge and the metadata tell clients so. DPoPAllowed
// accepts bearer tokens too and offers both challenges.
func ExampleDPoPConfig() {
	v, err := resource.New(resource.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []resource.Issuer{{Issuer: "https://auth.example.com"}},
		DPoP:     resource.DPoPConfig{Mode: resource.DPoPRequired},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	rec := httptest.NewRecorder()
	v.Middleware(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", nil))
	fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))
	m := v.Metadata()
	fmt.Println(m.DPoPBoundAccessTokensRequired, m.DPoPSigningAlgValuesSupported)
	// Output:
	// 401 DPoP resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 RS256"
	// true [ES256 RS256]
}
