package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// verifyCost is the CPU time one verification of the fixture's ES256
// access tokens takes in this process, the median over batches of the
// calling thread's CPU time (so that other processes on a loaded machine
// count as little as they can; wall time where the system has no thread
// CPU clock, see threadCPU):
//
//   - sig: the ES256 signature check alone, SHA-256 of the JWS signing
//     input and crypto/ecdsa's P-256 verification, what any verifier must
//     spend on a token it has not seen;
//   - jose: the whole verification the sdk peer does with go-jose (parse,
//     signature, claims decoding), for reference.
type verifyCost struct{ sig, jose time.Duration }

// measureVerifyCost times n verifications of each kind of a token minted
// by f, with the key its JWK Set publishes.
func measureVerifyCost(ctx context.Context, f *loadgen.Fixture, resourceURL string, n int) (verifyCost, error) {
	keys, err := fetchKeys(ctx, f.Issuer)
	if err != nil {
		return verifyCost{}, err
	}
	if len(keys.Keys) != 1 {
		return verifyCost{}, fmt.Errorf("want one key in the issuer's JWK Set, got %d", len(keys.Keys))
	}
	pub, ok := keys.Keys[0].Key.(*ecdsa.PublicKey)
	if !ok {
		return verifyCost{}, errors.New("the issuer's key is not an ECDSA key")
	}
	tok, err := f.FreshToken()
	if err != nil {
		return verifyCost{}, err
	}
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 || len(jws.Signatures[0].Signature) != 64 {
		return verifyCost{}, fmt.Errorf("the fixture's token is not one ES256 JWS: %v", err)
	}
	raw := jws.Signatures[0].Signature
	r, s := new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])
	input := []byte(tok[:strings.LastIndexByte(tok, '.')])
	sig := func() bool {
		h := sha256.Sum256(input)
		return ecdsa.Verify(pub, h[:], r, s)
	}
	verify := joseVerifier(keys, f.Issuer, resourceURL)
	full := func() bool {
		info, err := verify(ctx, tok, nil)
		return err == nil && info.UserID != ""
	}
	var c verifyCost
	if c.sig, err = threadCPUPer(n, sig); err != nil {
		return c, err
	}
	c.jose, err = threadCPUPer(n, full)
	return c, err
}

// threadCPUPer runs fn n times in 10 batches, each on one locked OS
// thread (threadCPU), and returns the median over batches of the thread's
// CPU time per call. It fails if fn reports failure.
func threadCPUPer(n int, fn func() bool) (time.Duration, error) {
	const batches = 10
	per := max(1, n/batches)
	var d []time.Duration
	for range batches {
		failed := false
		used, ok := threadCPU(func() {
			for range per {
				if !fn() {
					failed = true
					return
				}
			}
		})
		switch {
		case failed:
			return 0, errors.New("a verification failed")
		case !ok:
			return 0, errors.New("the thread's CPU time is unavailable")
		}
		d = append(d, used/time.Duration(per))
	}
	slices.Sort(d)
	return (d[batches/2-1] + d[batches/2]) / 2, nil
}
