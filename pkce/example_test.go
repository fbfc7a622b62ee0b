package pkce_test

import (
	"fmt"

	"github.com/mcpauth/mcpauth/pkce"
)

// The RFC 7636 Appendix B test vector.
func ExampleChallenge() {
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	fmt.Println(pkce.Challenge(verifier))
	// Output: E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM
}

func ExampleVerify() {
	verifier := pkce.GenerateVerifier()   // sent with the token request
	challenge := pkce.Challenge(verifier) // sent with the authorization request
	fmt.Println(pkce.Verify(verifier, challenge))
	fmt.Println(pkce.Verify(pkce.GenerateVerifier(), challenge))
	// Output:
	// true
	// false
}

func ExampleGenerateVerifier() {
	v := pkce.GenerateVerifier()
	fmt.Println(len(v), pkce.ValidVerifier(v))
	// Output: 43 true
}
