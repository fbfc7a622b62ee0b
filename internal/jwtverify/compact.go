package jwtverify

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// Split cuts a JWS in compact serialization (RFC 7515 §7.1) into its three
// parts. ok is false unless raw has exactly two dots and a non-empty header
// and payload; the parts are not decoded.
func Split(raw string) (header, payload, signature string, ok bool) {
	header, rest, ok1 := strings.Cut(raw, ".")
	payload, signature, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || header == "" || payload == "" || strings.IndexByte(signature, '.') >= 0 {
		return "", "", "", false
	}
	return header, payload, signature, true
}

// LooksLikeJWS reports whether raw has the JWS compact shape: three
// base64url (RFC 4648 §5) segments, the first two non-empty. An empty
// signature still has the shape, so that a token with alg "none" is refused
// as such rather than taken for an opaque token.
func LooksLikeJWS(raw string) bool {
	h, p, s, ok := Split(raw)
	return ok && isBase64URL(h) && isBase64URL(p) && isBase64URL(s)
}

// Base64URLAlphabet is the RFC 4648 §5 alphabet: A-Z, a-z, 0-9, "-", "_".
const Base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// base64URL is [Base64URLAlphabet] as a set. It is read-only.
var base64URL = NewByteSet(Base64URLAlphabet)

func isBase64URL(s string) bool { return base64URL.All(s) }

// ByteSet is a set of bytes as a lookup table (1 for a member), for the
// character-class scans a token gets on every request. Build it once with
// [NewByteSet] and share it read-only.
type ByteSet [256]uint8

// NewByteSet returns the set of the bytes of members.
func NewByteSet(members string) *ByteSet {
	t := new(ByteSet)
	for i := 0; i < len(members); i++ {
		t[members[i]] = 1
	}
	return t
}

// All reports whether every byte of s is in t. It reads one table entry
// per byte, without a branch, on four independent accumulators.
func (t *ByteSet) All(s string) bool {
	a, b, c, d := uint8(1), uint8(1), uint8(1), uint8(1)
	for len(s) >= 8 {
		a &= t[s[0]] & t[s[4]]
		b &= t[s[1]] & t[s[5]]
		c &= t[s[2]] & t[s[6]]
		d &= t[s[3]] & t[s[7]]
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		a &= t[s[i]]
	}
	return a&b&c&d == 1
}

// TypeIs matches a "typ" header value against a media type such as
// "at+jwt": case-insensitively, with or without the "application/" prefix
// (RFC 7515 §4.1.9).
func TypeIs(typ, want string) bool {
	if len(typ) > len("application/") && ascii.HasPrefixFold(typ, "application/") {
		typ = typ[len("application/"):]
	}
	return ascii.EqualFold(typ, want)
}

// ErrNotCompact: a string that is not a JWS in compact serialization, or
// whose header or payload is not base64url-encoded JSON.
var ErrNotCompact = errors.New("jwtverify: not a JWS in compact serialization")

// UnsafeClaimsWithoutVerification decodes the payload of the compact JWS
// raw into v with the claims decoding policy ([DecodeClaims]), verifying
// nothing: for a token the caller only routes, displays or looks keys up
// for, and never trusts.
func UnsafeClaimsWithoutVerification(raw string, v any) error {
	_, p, _, ok := Split(raw)
	if !ok {
		return ErrNotCompact
	}
	return decodeSegment(p, v)
}

// UnsafeHeaderWithoutVerification decodes the protected header of the
// compact JWS raw into v, verifying nothing.
func UnsafeHeaderWithoutVerification(raw string, v any) error {
	h, _, _, ok := Split(raw)
	if !ok {
		return ErrNotCompact
	}
	return decodeSegment(h, v)
}

func decodeSegment(seg string, v any) error {
	data, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return ErrNotCompact
	}
	if err := jsonx.DecodeObject(data, v); err != nil {
		return fmt.Errorf("%w: %w", ErrNotCompact, err)
	}
	return nil
}
