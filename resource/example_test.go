package resource_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
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

	"github.com/mcpauth/mcpauth/keyset"
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
			Keys: keyset.Static{{ID: "key-1", Public: &key.PublicKey}}}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	info, err := v.Verify(context.Background(), exampleToken(key, now, "mcp:tools"))
	fmt.Println(info.Subject, info.ClientID, info.Scopes, err)

	now = now.Add(2 * time.Hour)
	_, err = v.Verify(context.Background(), exampleToken(key, now.Add(-2*time.Hour), "mcp:tools"))
	var re *resource.Error
	fmt.Println(errors.Is(err, resource.ErrInvalidToken), errors.As(err, &re) && re.Reason == "token expired")
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
			Keys: keyset.Static{{ID: "key-1", Public: &key.PublicKey}}}},
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
			Keys: keyset.Static{{ID: "key-1", Public: &key.PublicKey}}}},
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
	// 401 DPoP resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA"
	// true [ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA]
}

// ParseStaticKeys reads an authorization server's JWK Set distributed out of
// band. Keys not meant for verifying signatures are skipped; a set holding
// a private or symmetric key is refused whole.
func ExampleParseStaticKeys() {
	keys, err := resource.ParseStaticKeys([]byte(`{"keys":[
		{"kty":"EC","kid":"sig-1","use":"sig","alg":"ES256","crv":"P-256",
		 "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
		{"kty":"EC","kid":"enc-1","use":"enc","crv":"P-256",
		 "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(keys), keys[0].ID, keys[0].Algorithm)

	_, err = resource.ParseStaticKeys([]byte(`{"keys":[{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}]}`))
	fmt.Println(errors.Is(err, resource.ErrInvalidConfig))
	// Output:
	// 1 sig-1 ES256
	// true
}

// A tool of a stateful go-sdk server reads the identity of the request it
// serves from req.Extra: its ctx comes from the request that opened the
// session, so TokenInfoFromContext(ctx) would still report the scopes of
// that time after the host steps up. The session ID the client gets is
// bound to alice; the go-sdk sees her as its auth.TokenInfo too.
func ExampleTokenInfoFromSDK() {
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

	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		info := resource.TokenInfoFromSDK(req.Extra.TokenInfo)
		text := info.Subject + " " + strings.Join(info.Scopes, " ") + " (" + req.Extra.TokenInfo.UserID + ")"
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	h := v.Middleware(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{JSONResponse: true})) // stateful, the default

	post := func(scope, session, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+exampleToken(key, now, scope))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	opened := post("mcp:tools", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1.0.0"}}}`)
	session := opened.Header().Get("Mcp-Session-Id")
	post("mcp:tools", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	whoami := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	for _, scope := range []string{"mcp:tools", "mcp:tools files:write"} {
		var res struct {
			Result mcp.CallToolResult `json:"result"`
		}
		_ = json.Unmarshal(post(scope, session, whoami).Body.Bytes(), &res)
		fmt.Println(res.Result.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// alice mcp:tools (https://auth.example.com#alice)
	// alice mcp:tools files:write (https://auth.example.com#alice)
}

// Limits per verified identity: overall, and tighter for one costly tool.
// A request over its limit gets 429 with Retry-After.
func ExampleRateLimit() {
	rl, err := resource.ParseRateLimit([]byte(`{"identity": {"per_second": 5, "burst": 20},
	 "tools": {"search": {"per_second": 0.5, "burst": 5}}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rl.Identity.Burst, rl.Tools["search"].PerSecond)
	// Output: 20 0.5
}
