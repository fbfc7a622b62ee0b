package jwtverify

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// Limits of a [ClaimPath].
const (
	MaxClaimPathDepth = 8
	MaxClaimPathBytes = 256
)

// ErrClaimPath: a claim path that does not parse (configuration).
var ErrClaimPath = errors.New("jwtverify: invalid claim path")

// ErrClaimType: a claim, or an object on the way to it, of another JSON
// type than the reader expects (peer input).
var ErrClaimType = errors.New("jwtverify: claim of an unexpected type")

// ClaimPath names a claim of a JWT payload, possibly one nested in
// objects. It is written as a member name ("scp", "cognito:groups"), as
// names joined by dots ("realm_access.roles"), or, for names that hold a
// dot themselves, as an RFC 6901 JSON Pointer starting with "/"
// ("/resource_access/my.app/roles", "/https:~1~1example.com~1roles"). It
// descends through objects only, never into arrays, at most
// [MaxClaimPathDepth] names deep. The zero value names nothing.
type ClaimPath struct {
	raw   string
	names []string
}

// ParseClaimPath parses s by the rules of [ClaimPath]. Every name must be
// non-empty valid UTF-8; errors match [ErrClaimPath] and quote s, which is
// configuration, not peer input.
func ParseClaimPath(s string) (ClaimPath, error) {
	if s == "" || len(s) > MaxClaimPathBytes || !utf8.ValidString(s) {
		return ClaimPath{}, fmt.Errorf("%w: %q: want 1 to %d bytes of UTF-8", ErrClaimPath, s, MaxClaimPathBytes)
	}
	var names []string
	if s[0] == '/' {
		p := jsontext.Pointer(s)
		if !p.IsValid() {
			return ClaimPath{}, fmt.Errorf("%w: %q is not an RFC 6901 JSON Pointer", ErrClaimPath, s)
		}
		for name := range p.Tokens() {
			names = append(names, name)
		}
	} else {
		names = strings.Split(s, ".")
	}
	if len(names) > MaxClaimPathDepth {
		return ClaimPath{}, fmt.Errorf("%w: %q is more than %d names deep", ErrClaimPath, s, MaxClaimPathDepth)
	}
	for _, n := range names {
		if n == "" {
			return ClaimPath{}, fmt.Errorf("%w: %q has an empty name", ErrClaimPath, s)
		}
	}
	return ClaimPath{raw: s, names: names}, nil
}

// String returns the path as it was written.
func (p ClaimPath) String() string { return p.raw }

// Names returns the member names the path descends through, outermost
// first. The result is the caller's own.
func (p ClaimPath) Names() []string { return append([]string(nil), p.names...) }

// First returns the top-level member name, "" for the zero value.
func (p ClaimPath) First() string {
	if len(p.names) == 0 {
		return ""
	}
	return p.names[0]
}

// Members are the members of a JWT payload that a verifier's claims
// struct does not name, kept as raw JSON values: embed them in that struct
// with the tag `json:",unknown"` and [DecodeClaims] fills them with the one
// JSON policy (duplicate names refused at every depth, names
// case-sensitive, valid UTF-8).
type Members map[string]jsontext.Value

// Lookup returns the value p names in m. ok is false when a member on the
// way is absent or JSON null, or p is the zero value; err matches
// [ErrClaimType] when a member on the way to the last one is not an object.
// The value shares storage with m.
func (m Members) Lookup(p ClaimPath) (v jsontext.Value, ok bool, err error) {
	if len(p.names) == 0 {
		return nil, false, nil
	}
	cur := m
	for i, name := range p.names {
		v, ok = cur[name]
		if !ok || v.Kind() == 'n' {
			return nil, false, nil
		}
		if i == len(p.names)-1 {
			return v, true, nil
		}
		if v.Kind() != '{' {
			return nil, false, ErrClaimType
		}
		cur = nil
		if jsonx.DecodeObject(v, &cur) != nil {
			return nil, false, ErrClaimType
		}
	}
	return nil, false, nil // unreachable: the loop returns at the last name
}

// ClaimString decodes v, which must be a JSON string; errors match
// [ErrClaimType].
func ClaimString(v jsontext.Value) (string, error) {
	var s string
	if v.Kind() != '"' || jsonx.DecodeValue(v, &s) != nil {
		return "", ErrClaimType
	}
	return s, nil
}

// ClaimStrings decodes v, which must be a JSON array of strings; errors
// match [ErrClaimType].
func ClaimStrings(v jsontext.Value) ([]string, error) {
	var s []string
	if v.Kind() != '[' || jsonx.DecodeValue(v, &s) != nil {
		return nil, ErrClaimType
	}
	return s, nil
}
