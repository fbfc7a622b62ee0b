// Package authservertest is the test kit of package authserver, as
// net/http/httptest is that of net/http: a real authorization server on a
// loopback listener, in one call, for tests of MCP clients and resource
// servers, and switches that make it misbehave on purpose.
//
// Start one in a test; it is closed when the test ends:
//
//	as := authservertest.NewServer(t, authserver.Config{
//		Consent: authserver.ConsentAuto,
//		Scopes:  []string{"mcp:read"},
//		Clients: []authserver.Client{{ID: "app", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
//	})
//	// as.Issuer() is http://127.0.0.1:<port>; as.Client() talks to it.
//
// [Start] does the same outside a test and returns an error instead; the
// caller closes the server.
//
// A client's defences against authorization server mix-up are tested with
// faults: NewServer(t, cfg, [WrongIss]) sends a wrong iss with every
// authorization response. [InjectFaults] wraps any handler the same way (the
// `mcpauth authserver --insecure-fault` flag uses it), and
// [RewriteAuthorizationResponse] and [RewriteMetadata] make other hostile
// answers. Faults change only what the server sends, never what it checks.
//
// Package [github.com/mcpauth/mcpauth/authserver/storagetest] checks a
// store against the contract of [authserver.Storage].
//
// Everything listens on 127.0.0.1 only. Nothing here belongs in a served
// deployment.
package authservertest
