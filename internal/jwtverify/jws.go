package jwtverify

import (
	"context"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/keyset"
)

// Failed signature checks: the one parse-select-verify path of every JWT
// signed by a key a verifier looks up (access tokens, client assertions,
// authorization grants, the authorization server's own tokens).
var (
	// ErrMalformed: not a JWS in compact serialization with exactly one
	// signature, or it uses the unencoded payload option (RFC 7797).
	ErrMalformed = errors.New("jwtverify: token is malformed")
	// ErrAlgorithm: "alg" is not on the verifier's allowlist.
	ErrAlgorithm = errors.New("jwtverify: signing algorithm not accepted")
	// ErrUnknownKey: no key of the source may have signed the token (the
	// source reported keyset.ErrUnknownKey, or none of its keys fits the
	// token's "kid" and "alg"). It matches keyset.ErrUnknownKey.
	ErrUnknownKey = fmt.Errorf("jwtverify: signing key is unknown: %w", keyset.ErrUnknownKey)
	// ErrKeysUnavailable: the source could not give keys; it is joined with
	// the source's error.
	ErrKeysUnavailable = errors.New("jwtverify: signing keys unavailable")
	// ErrSignature: no candidate key verifies the signature.
	ErrSignature = errors.New("jwtverify: signature is invalid")
)

// ParseCompact parses raw, a JWS in compact serialization (RFC 7515 §7.1)
// with go-jose, accepting only the algorithms algs. The result has exactly
// one signature and is not authenticated yet: its protected header and
// payload are for the cheap checks that come before [VerifySignature].
// Errors are [ErrAlgorithm] or [ErrMalformed].
func ParseCompact(raw string, algs []jose.SignatureAlgorithm) (*jose.JSONWebSignature, error) {
	jws, err := jose.ParseSignedCompact(raw, algs)
	if err != nil {
		var ua *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &ua) {
			return nil, ErrAlgorithm
		}
		return nil, ErrMalformed
	}
	if len(jws.Signatures) != 1 {
		return nil, ErrMalformed
	}
	if _, ok := jws.Signatures[0].Protected.ExtraHeaders["b64"]; ok {
		return nil, ErrMalformed
	}
	return jws, nil
}

// VerifySignature asks src for the keys of the header's "kid" and checks
// the signature with the candidates among them (jwa.Candidates: keys under
// that kid first, then keys without one, each fitting "alg"; at most
// jwa.MaxKeyTries). Keys are never taken from the token itself ("jwk",
// "jku", "x5u", "x5c"). It returns the key that verified; errors are
// [ErrUnknownKey], [ErrSignature], or [ErrKeysUnavailable] joined with the
// source's error (the context's, when it ended).
func VerifySignature(ctx context.Context, jws *jose.JSONWebSignature, src keyset.Source) (keyset.Key, error) {
	h := &jws.Signatures[0].Protected
	if src == nil {
		return keyset.Key{}, ErrUnknownKey
	}
	keys, err := src.Keys(ctx, h.KeyID)
	switch {
	case errors.Is(err, keyset.ErrUnknownKey):
		return keyset.Key{}, errors.Join(ErrUnknownKey, err)
	case err != nil:
		return keyset.Key{}, errors.Join(ErrKeysUnavailable, err)
	}
	tried := false
	for k := range jwa.Candidates(keys, h.KeyID, h.Algorithm) {
		tried = true
		if _, err := jws.Verify(k.Public); err == nil {
			return k, nil
		}
	}
	if !tried {
		return keyset.Key{}, ErrUnknownKey
	}
	return keyset.Key{}, ErrSignature
}
