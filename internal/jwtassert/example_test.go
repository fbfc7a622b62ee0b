package jwtassert_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

func ExampleParsePrivateKeyPEM() {
	// A PEM key as the conformance suite hands it to a client
	// ("private_key_pem" in MCP_CONFORMANCE_CONTEXT).
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})

	key, err := jwtassert.ParsePrivateKeyPEM(pemKey)
	if err != nil {
		panic(err)
	}
	s, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "my-client", Key: key})
	fmt.Println(s.Algorithm())
	// Output: ES256
}

func ExampleNewClientAssertionSigner() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
		ClientID: "https://client.example.com/client.json",
		Key:      key,
		KeyID:    "2026-07",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Algorithm())
	// Output: ES256
}

func ExampleClientAssertionSigner_Sign() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "my-client", Key: key})

	// The audience is the authorization server's issuer identifier, taken
	// from its validated metadata, not its token endpoint URL.
	assertion, err := s.Sign("https://as.example.com")
	if err != nil {
		panic(err)
	}
	form := url.Values{
		"grant_type":            {oauthmeta.GrantTypeClientCredentials},
		"client_assertion_type": {jwtassert.ClientAssertionType},
		"client_assertion":      {assertion},
	}
	fmt.Println(form.Get("client_assertion_type"))
	// Output: urn:ietf:params:oauth:client-assertion-type:jwt-bearer
}

func ExampleClientAssertionSigner_Algorithm() {
	key, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	s, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "c", Key: key})
	fmt.Println(s.Algorithm())
	// Output: ES384
}

func ExampleNewClientAssertionVerifier() {
	v, err := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{
		Audiences: []string{"https://as.example.com"}, // the issuer identifier only
	})
	fmt.Println(v != nil, err)
	// Output: true <nil>
}

func ExampleClientAssertionVerifier_Verify() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "my-client", Key: key})
	verifier, _ := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{
		Audiences: []string{"https://as.example.com"},
	})
	assertion, _ := signer.Sign("https://as.example.com")
	keys := keyset.PublicKeys(key.Public()) // the client's registered keys

	ca, err := verifier.Verify(context.Background(), assertion, "my-client", keys)
	fmt.Println(ca.ClientID, err)

	_, err = verifier.Verify(context.Background(), assertion, "my-client", keys)
	fmt.Println(errors.Is(err, replay.ErrReplayed), jwtassert.OAuthError(err).Code)
	// Output:
	// my-client <nil>
	// true invalid_client
}

func ExampleUnverifiedClientID() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: "my-client", Key: key})
	assertion, _ := signer.Sign("https://as.example.com")
	// Only to find whose keys to verify with; Verify decides.
	id, err := jwtassert.UnverifiedClientID(assertion)
	fmt.Println(id, err)
	// Output: my-client <nil>
}

func ExampleNewGrantVerifier() {
	idpKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	v, err := jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
		Audiences: []string{"https://as.example.com"},
		Issuers: []jwtassert.TrustedIssuer{
			{Issuer: "https://acme.idp.example", Keys: keyset.PublicKeys(idpKey.Public())},
		},
		Profile: jwtassert.ProfileIDJAG,
	})
	fmt.Println(v != nil, err)
	// Output: true <nil>
}

func ExampleGrantVerifier_Verify() {
	idpKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	idp, _ := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{Issuer: "https://acme.idp.example", Key: idpKey})
	as, _ := jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
		Audiences: []string{"https://as.example.com"},
		Issuers:   []jwtassert.TrustedIssuer{{Issuer: "https://acme.idp.example", Keys: keyset.PublicKeys(idpKey.Public())}},
		Profile:   jwtassert.ProfileIDJAG,
	})
	jag, _ := idp.Sign(jwtassert.IDJAGClaims{
		Subject: "U019488227", Audience: "https://as.example.com", ClientID: "my-client",
		Resource: []string{"https://mcp.example.com/mcp"}, Scope: []string{"chat.read"},
	})

	// grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<jag>,
	// presented by the authenticated client "my-client".
	g, err := as.Verify(context.Background(), jag, "my-client")
	fmt.Println(g.Subject, g.Resource, g.Scope, err)

	_, err = as.Verify(context.Background(), jag, "another-client")
	fmt.Println(jwtassert.OAuthError(err).Code)
	// Output:
	// U019488227 [https://mcp.example.com/mcp] [chat.read] <nil>
	// invalid_grant
}

func ExampleNewIDJAGSigner() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{Issuer: "https://acme.idp.example", Key: key, KeyID: "idp-1"})
	fmt.Println(s != nil, err)
	// Output: true <nil>
}

func ExampleIDJAGSigner_Sign() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, _ := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{Issuer: "https://acme.idp.example", Key: key})
	jag, err := s.Sign(jwtassert.IDJAGClaims{
		Subject:  "U019488227",
		Audience: "https://as.example.com",
		ClientID: "my-client",
		Resource: []string{"https://mcp.example.com/mcp"},
		Extra:    map[string]any{"email": "user@example.com"},
	})
	// The token exchange response carries it as access_token with
	// issued_token_type = TokenTypeIDJAG and token_type "N_A".
	resp := oauthmeta.TokenResponse{AccessToken: jag, TokenType: "N_A", IssuedTokenType: oauthmeta.TokenTypeIDJAG}
	fmt.Println(resp.IssuedTokenType, err)
	// Output: urn:ietf:params:oauth:token-type:id-jag <nil>
}

func ExampleOAuthError() {
	v, _ := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{Audiences: []string{"https://as.example.com"}})
	_, err := v.Verify(context.Background(), "not-a-jwt", "my-client", nil)
	oe := jwtassert.OAuthError(err) // the token endpoint's error body; invalid_client answers 401
	fmt.Println(oe.Code)
	// Output: invalid_client
}
