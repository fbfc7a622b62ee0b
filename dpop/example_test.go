package dpop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

func ExampleNewProver() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	prover, err := dpop.NewProver(dpop.ProverConfig{Key: key})
	if err != nil {
		panic(err)
	}
	fmt.Println(prover.Algorithm())
	// Output: ES256
}

func ExampleProver_Proof() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{}) // fresh ES256 key
	proof, err := prover.Proof(dpop.Request{
		Method:      "POST",
		URL:         "https://mcp.example.com/mcp",
		AccessToken: "the-access-token", // adds "ath"
	})
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest("POST", "https://mcp.example.com/mcp", nil)
	req.Header.Set("Authorization", dpop.Scheme+" the-access-token")
	req.Header.Set(dpop.HeaderName, proof)
	fmt.Println(strings.Count(proof, "."))
	// Output: 2
}

func ExampleProver_JKT() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	// The authorization request may carry dpop_jkt (RFC 9449 §10); tokens
	// issued to this client carry it as cnf.jkt.
	fmt.Println(len(prover.JKT()))
	// Output: 43
}

func ExampleProver_Algorithm() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	fmt.Println(prover.Algorithm())
	// Output: ES256
}

func ExampleProver_PublicKey() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	jkt, _ := dpop.JKT(prover.PublicKey())
	fmt.Println(jkt == prover.JKT())
	// Output: true
}

func ExampleNewVerifier() {
	verifier, err := dpop.NewVerifier(dpop.VerifierConfig{
		Algorithms: []string{"ES256", "EdDSA"},
		IATWindow:  time.Minute,
		Leeway:     5 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(verifier.Algorithms())
	// Output: [ES256 EdDSA]
}

func ExampleVerifier_Verify() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{})
	req := dpop.Request{Method: "POST", URL: "https://mcp.example.com/mcp", AccessToken: "the-access-token"}
	proof, _ := prover.Proof(req)

	p, err := verifier.Verify(context.Background(), proof, req)
	fmt.Println(err, p.JKT == prover.JKT())
	// The same proof again is a replay.
	_, err = verifier.Verify(context.Background(), proof, req)
	fmt.Println(errors.Is(err, dpop.ErrReplayedProof))
	// Output:
	// <nil> true
	// true
}

func ExampleVerifier_Algorithms() {
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{Algorithms: []string{"ES256", "PS256"}})
	prm := oauthmeta.ProtectedResourceMetadata{
		Resource:                      "https://mcp.example.com/mcp",
		DPoPSigningAlgValuesSupported: verifier.Algorithms(),
	}
	fmt.Println(prm.DPoPSigningAlgValuesSupported)
	// Output: [ES256 PS256]
}

func ExampleVerifier_Nonce() {
	nonces, _ := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: make([]byte, 32)}) // use a random key
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{Nonces: nonces})
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	req := dpop.Request{Method: "POST", URL: "https://as.example.com/token"}
	ctx := context.Background()

	proof, _ := prover.Proof(req)
	_, err := verifier.Verify(ctx, proof, req)
	fmt.Println(dpop.OAuthError(err).Code) // answer with a DPoP-Nonce header

	req.Nonce, _ = verifier.Nonce(ctx) // the client retries with it
	proof, _ = prover.Proof(req)
	req.Nonce = "" // the verifier checks it through its NonceSource
	_, err = verifier.Verify(ctx, proof, req)
	fmt.Println(err)
	// Output:
	// use_dpop_nonce
	// <nil>
}

func ExampleProof_CheckBinding() {
	prover, _ := dpop.NewProver(dpop.ProverConfig{})
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{})
	req := dpop.Request{Method: "GET", URL: "https://mcp.example.com/mcp", AccessToken: "tok"}
	proof, _ := prover.Proof(req)
	p, _ := verifier.Verify(context.Background(), proof, req)

	tokenJKT := "bound-to-another-key" // the token's cnf.jkt
	err := p.CheckBinding(tokenJKT)
	fmt.Println(errors.Is(err, dpop.ErrKeyMismatch), dpop.OAuthError(err).Code)
	// Output: true invalid_token
}

func ExampleJKT() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jkt, err := dpop.JKT(&key.PublicKey)
	fmt.Println(len(jkt), err)
	// Output: 43 <nil>
}

func ExampleNewHMACNonces() {
	nonces, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{
		Key:    make([]byte, 32), // at least 32 random bytes, shared by all instances
		Label:  "mcp.example.com resource server",
		Period: 5 * time.Minute,
	})
	if err != nil {
		panic(err)
	}
	var _ dpop.NonceSource = nonces
	fmt.Println("ok")
	// Output: ok
}

func ExampleHMACNonces_Nonce() {
	nonces, _ := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: make([]byte, 32)})
	nonce, _ := nonces.Nonce(context.Background())
	h := http.Header{}
	h.Set(dpop.NonceHeader, nonce)
	fmt.Println(len(h.Get("DPoP-Nonce")))
	// Output: 32
}

func ExampleHMACNonces_CheckNonce() {
	nonces, _ := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: make([]byte, 32)})
	nonce, _ := nonces.Nonce(context.Background())
	fmt.Println(nonces.CheckNonce(context.Background(), nonce))
	fmt.Println(errors.Is(nonces.CheckNonce(context.Background(), "made-up"), dpop.ErrNonceInvalid))
	// Output:
	// <nil>
	// true
}

func ExampleChallenge() {
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{})
	_, err := verifier.Verify(context.Background(), "", // no DPoP header
		dpop.Request{Method: "POST", URL: "https://mcp.example.com/mcp", AccessToken: "tok"})
	c := dpop.Challenge(verifier.Algorithms(), err,
		oauthmeta.Param{Name: oauthmeta.ParamResourceMetadata, Value: "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"})
	fmt.Println(c.String())
	// Output: DPoP error="invalid_dpop_proof", error_description="missing DPoP proof", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA"
}

func ExampleProofFromHeader() {
	h := http.Header{}
	h.Add("DPoP", "first.proof.jwt")
	h.Add("DPoP", "second.proof.jwt")
	_, err := dpop.ProofFromHeader(h)
	fmt.Println(errors.Is(err, dpop.ErrMultipleProofs))
	// Output: true
}

func ExampleOAuthError() {
	verifier, _ := dpop.NewVerifier(dpop.VerifierConfig{})
	_, err := verifier.Verify(context.Background(), "not-a-proof",
		dpop.Request{Method: "POST", URL: "https://as.example.com/token"})
	oe := dpop.OAuthError(err) // the token endpoint's error body (RFC 6749 §5.2)
	fmt.Println(oe.Code)
	// Output: invalid_dpop_proof
}

func ExampleIsNonceError() {
	fmt.Println(dpop.IsNonceError(fmt.Errorf("x: %w", dpop.ErrNonceRequired)), dpop.IsNonceError(dpop.ErrBadSignature))
	// Output: true false
}
