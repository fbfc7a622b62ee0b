package oauthmeta

import (
	"errors"
	"fmt"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DecodeJSON decodes data, a JSON document received from another party,
// into v by the rule every Parse function of this package applies; use it
// for a type built on this package's (a struct embedding [ClientMetadata]
// with members of your own, for instance):
//
//   - data holds exactly one JSON object, or exactly one JSON array when v
//     points to a slice or an array, and nothing after it (null is refused);
//   - names match case-sensitively, and a duplicate name at any depth is an
//     error: encoding/json (v1) folds case and lets the last duplicate win,
//     so {"issuer":"https://good","ISSUER":"https://evil"} would decode to
//     whichever came last;
//   - invalid UTF-8 is an error;
//   - unknown names are ignored (RFC 8414 §3.2, RFC 9728 §3.2).
//
// These are the defaults of github.com/go-json-experiment/json, the
// reference implementation of encoding/json/v2, which does the decoding.
// The error wraps [ErrMalformed] and says what is wrong and where (a JSON
// Pointer, cut at 64 bytes), never quoting a value of the input.
func DecodeJSON(data []byte, v any) error {
	open, notOpen := byte('{'), "not a JSON object"
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		if k := t.Elem().Kind(); k == reflect.Slice || k == reflect.Array {
			open, notOpen = '[', "not a JSON array"
		}
	}
	if firstByte(data) != open {
		return fmt.Errorf("%w: %s", ErrMalformed, notOpen)
	}
	if err := jsonv2.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, describeJSON(err))
	}
	return nil
}

// firstByte returns the first byte of data after JSON whitespace (RFC 8259
// §2), or 0 when there is none. It runs before every decode (token claims
// on every fresh request), so it scans without building a cutset.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// describeJSON reduces a decoder error to its kind and location without
// quoting any part of the input, which may be a secret or attacker-chosen
// text.
func describeJSON(err error) string {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return "duplicate object name"
	}
	var se *jsonv2.SemanticError
	switch {
	case !errors.As(err, &se):
		return "invalid JSON"
	case se.JSONPointer != "":
		return "unexpected value at " + truncate(string(se.JSONPointer), 64)
	}
	return "unexpected value"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
