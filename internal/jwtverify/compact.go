package jwtverify

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

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

// base64URL is the RFC 4648 §5 alphabet as a 128-bit set (bit c of
// lo for c < 64, bit c-64 of hi otherwise): "-", 0-9, A-Z, "_", a-z.
const base64URLLo, base64URLHi = 1<<'-' | 0x3ff<<'0', 0x3ffffff<<('A'-64) | 1<<('_'-64) | 0x3ffffff<<('a'-64)

func isBase64URL(s string) bool { return AllIn(s, base64URLLo, base64URLHi) }

// AllIn reports whether every byte of s is an ASCII character in the set
// given as two bitmasks: bit c of lo for c < 64, bit c-64 of hi for
// 64 <= c < 128. It runs without a branch per byte, on four independent
// accumulators (a token is scanned on every request).
func AllIn(s string, lo, hi uint64) bool {
	t := [4]uint64{lo, hi} // indexed by c>>6: bytes >= 128 find 0
	a, b, c, d := uint64(1), uint64(1), uint64(1), uint64(1)
	for len(s) >= 8 {
		a &= t[s[0]>>6] >> (s[0] & 63) & (t[s[4]>>6] >> (s[4] & 63))
		b &= t[s[1]>>6] >> (s[1] & 63) & (t[s[5]>>6] >> (s[5] & 63))
		c &= t[s[2]>>6] >> (s[2] & 63) & (t[s[6]>>6] >> (s[6] & 63))
		d &= t[s[3]>>6] >> (s[3] & 63) & (t[s[7]>>6] >> (s[7] & 63))
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		a &= t[s[i]>>6] >> (s[i] & 63)
	}
	return a&b&c&d&1 == 1
}

// TypeIs matches a "typ" header value against a media type such as
// "at+jwt": case-insensitively, with or without the "application/" prefix
// (RFC 7515 §4.1.9).
func TypeIs(typ, want string) bool {
	if len(typ) > len("application/") && strings.EqualFold(typ[:len("application/")], "application/") {
		typ = typ[len("application/"):]
	}
	return strings.EqualFold(typ, want)
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
