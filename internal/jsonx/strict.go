package jsonx

import (
	"bytes"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrNotObject is returned when a document is not a single JSON object.
var ErrNotObject = errors.New("jsonx: document is not a JSON object")

// ErrSyntax wraps every decoding failure, so callers can tell "the peer sent
// garbage" from their own errors with errors.Is.
var ErrSyntax = errors.New("jsonx: malformed JSON document")

// DecodeObject decodes data, which must hold exactly one JSON object, into v.
// Object names are matched case-sensitively, duplicate names are rejected and
// unknown names are ignored. The returned error never contains the input.
func DecodeObject(data []byte, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ErrNotObject
	}
	if err := jsonv2.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s", ErrSyntax, describe(err))
	}
	return nil
}

// describe reduces a decoder error to its kind and location without quoting
// any part of the input, which may be a secret or attacker-chosen text.
func describe(err error) string {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return "duplicate object name"
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		if se.JSONPointer != "" {
			return "unexpected value at " + truncate(string(se.JSONPointer), 64)
		}
		return "unexpected value"
	}
	return "invalid JSON"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
