package oauthmeta_test

import (
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

func ExampleProtectedResourceMetadataURL() {
	u, _ := oauthmeta.ProtectedResourceMetadataURL("https://mcp.example.com/public/mcp")
	fmt.Println(u)
	// Output: https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp
}

func ExampleAuthServerMetadataURLs() {
	urls, _ := oauthmeta.AuthServerMetadataURLs("https://auth.example.com/tenant1")
	for _, u := range urls {
		fmt.Println(u)
	}
	// Output:
	// https://auth.example.com/.well-known/oauth-authorization-server/tenant1
	// https://auth.example.com/.well-known/openid-configuration/tenant1
	// https://auth.example.com/tenant1/.well-known/openid-configuration
}

func ExampleParseChallenges() {
	cs, err := oauthmeta.ParseChallenges(`Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`)
	if err != nil {
		panic(err)
	}
	bearer, _ := oauthmeta.FindChallenge(cs, "bearer")
	fmt.Println(bearer.Value(oauthmeta.ParamError))
	fmt.Println(bearer.Scopes())
	fmt.Println(bearer.Value(oauthmeta.ParamResourceMetadata))
	// Output:
	// insufficient_scope
	// [files:read files:write]
	// https://h/.well-known/oauth-protected-resource/mcp
}

func ExampleChallenge_String() {
	c := oauthmeta.Challenge{Scheme: "Bearer", Params: []oauthmeta.Param{
		{Name: oauthmeta.ParamError, Value: string(oauthmeta.CodeInvalidToken)},
		{Name: oauthmeta.ParamErrorDescription, Value: `token "expired"`},
		{Name: oauthmeta.ParamResourceMetadata, Value: "https://h/.well-known/oauth-protected-resource/mcp"},
	}}
	fmt.Println(c)
	// Output: Bearer error="invalid_token", error_description="token \"expired\"", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"
}

func ExampleCanonicalResource() {
	c, _ := oauthmeta.CanonicalResource("HTTPS://MCP.Example.com:443/mcp")
	fmt.Println(c)
	fmt.Println(oauthmeta.SameResource("https://mcp.example.com/mcp", "https://mcp.example.com/mcp/"))
	// Output:
	// https://mcp.example.com/mcp
	// false
}

func ExampleURLPolicy_CheckURL() {
	strict := oauthmeta.URLPolicy{}
	dev := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: true}
	fmt.Println(strict.CheckURL("https://auth.example.com/authorize") == nil)
	fmt.Println(errors.Is(strict.CheckURL("javascript:alert(1)"), oauthmeta.ErrUnsafeURL))
	fmt.Println(strict.CheckURL("http://127.0.0.1:9000/authorize") == nil)
	fmt.Println(dev.CheckURL("http://127.0.0.1:9000/authorize") == nil)
	// Output:
	// true
	// true
	// false
	// true
}

func ExampleProtectedResourceMetadata_Validate() {
	doc := []byte(`{"resource":"https://evil.example.com/mcp","authorization_servers":["https://auth.example.com"]}`)
	m, err := oauthmeta.ParseProtectedResourceMetadata(doc)
	if err != nil {
		panic(err)
	}
	err = m.Validate("https://mcp.example.com/mcp", oauthmeta.URLPolicy{})
	fmt.Println(errors.Is(err, oauthmeta.ErrResourceMismatch))
	// Output: true
}

func ExampleAuthServerMetadata_Validate() {
	doc := []byte(`{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize",
		"token_endpoint":"https://auth.example.com/token","response_types_supported":["code"],
		"code_challenge_methods_supported":["S256"]}`)
	m, err := oauthmeta.ParseAuthServerMetadata(doc)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Validate("https://auth.example.com", oauthmeta.URLPolicy{}) == nil, m.SupportsS256())
	fmt.Println(errors.Is(m.Validate("https://auth.example.com/", oauthmeta.URLPolicy{}), oauthmeta.ErrIssuerMismatch))
	// Output:
	// true true
	// true
}

func ExampleError() {
	body := []byte(`{"error":"invalid_grant","error_description":"authorization code already used"}`)
	e, _ := oauthmeta.ParseError(body)
	var err error = e
	fmt.Println(errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}))
	// Output: true
}

func ExampleParseScope() {
	s, _ := oauthmeta.ParseScope("files:read  files:write files:read")
	fmt.Println(s, oauthmeta.FormatScope(s))
	// Output: [files:read files:write] files:read files:write
}

func ExampleAppendScope() {
	var buf [4]string
	s, _ := oauthmeta.AppendScope(buf[:0], "mcp:tools  files:read mcp:tools")
	fmt.Println(s, len(s))
	// Output: [mcp:tools files:read] 2
}

func ExampleDecodeJSON() {
	// Metadata with a member of one's own, decoded by the package's rule.
	var md struct {
		oauthmeta.ProtectedResourceMetadata
		Extra string `json:"example_extension"`
	}
	err := oauthmeta.DecodeJSON([]byte(`{"resource":"https://mcp.example.com/mcp","example_extension":"x"}`), &md)
	fmt.Println(md.Resource, md.Extra, err)

	err = oauthmeta.DecodeJSON([]byte(`{"resource":"https://good.example","RESOURCE":"https://evil.example","resource":"https://evil.example"}`), &md)
	fmt.Println(errors.Is(err, oauthmeta.ErrMalformed), err)
	// Output:
	// https://mcp.example.com/mcp x <nil>
	// true oauthmeta: malformed document: duplicate object name
}

// The parameters of an RFC 8693 token exchange of a user's access token for
// one at another service.
func ExampleTokenExchangeRequest_Form() {
	r := oauthmeta.TokenExchangeRequest{
		SubjectToken: "eyJ...", SubjectTokenType: oauthmeta.TokenTypeAccessToken,
		RequestedTokenType: oauthmeta.TokenTypeAccessToken, Audience: []string{"github"},
	}
	fmt.Println(r.Form().Encode())
	// Output: audience=github&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&subject_token=eyJ...&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token
}
