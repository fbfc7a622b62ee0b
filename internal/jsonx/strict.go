package jsonx

import (
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrNotObject is returned when a document is not a single JSON object.
var ErrNotObject = errors.New("jsonx: document is not a JSON object")

// ErrNotArray is returned when a document is not a single JSON array.
var ErrNotArray = errors.New("jsonx: document is not a JSON array")

// ErrSyntax wraps every decoding failure, so callers can tell "the peer sent
// garbage" from their own errors with errors.Is.
var ErrSyntax = errors.New("jsonx: malformed JSON document")

// DecodeObject decodes data, which must hold exactly one JSON object, into v.
// Object names are matched case-sensitively, duplicate names are rejected and
// unknown names are ignored. The returned error never contains the input.
func DecodeObject(data []byte, v any) error { return decode(data, v, '{', ErrNotObject) }

// DecodeObjectStrict is [DecodeObject] for documents this module's own
// operators write (policy files): an unknown name anywhere in the document
// is an error too, so a misspelt rule cannot silently go unenforced.
func DecodeObjectStrict(data []byte, v any) error {
	return decode(data, v, '{', ErrNotObject, jsonv2.RejectUnknownMembers(true))
}

// DecodeArray decodes data, which must hold exactly one JSON array, into v
// (a pointer to a slice), with the rules of [DecodeObject]: names of the
// objects inside match case-sensitively, duplicate names are rejected and
// unknown names are ignored. The returned error never contains the input.
func DecodeArray(data []byte, v any) error { return decode(data, v, '[', ErrNotArray) }

// decode unmarshals data, which must start with open after white space
// (else notOpen), with opts.
func decode(data []byte, v any, open byte, notOpen error, opts ...jsonv2.Options) error {
	if firstByte(data) != open {
		return notOpen
	}
	if err := jsonv2.Unmarshal(data, v, opts...); err != nil {
		return fmt.Errorf("%w: %s", ErrSyntax, describe(err))
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

// describe reduces a decoder error to its kind and location without quoting
// any part of the input, which may be a secret or attacker-chosen text.
func describe(err error) string {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return "duplicate object name"
	}
	var se *jsonv2.SemanticError
	switch {
	case !errors.As(err, &se):
		return "invalid JSON"
	case errors.Is(se.Err, jsonv2.ErrUnknownName):
		return "unknown name at " + truncate(string(se.JSONPointer), 64)
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

// DecodeValue decodes data, which must hold exactly one JSON value of any
// kind (a member already cut out of its document, such as a JWT claim),
// into v by the rules of [DecodeObject]. The returned error never contains
// the input.
func DecodeValue(data []byte, v any) error {
	if err := jsonv2.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s", ErrSyntax, describe(err))
	}
	return nil
}
