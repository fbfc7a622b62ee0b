package jsonx

import (
	"errors"
	"fmt"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DecodeObject decodes data, which must hold exactly one JSON object, into
// v (a pointer to a struct or a map) by the module's one rule for JSON
// from other parties, [oauthmeta.DecodeJSON]: names matched
// case-sensitively, duplicate names rejected, unknown names ignored. The
// error wraps oauthmeta.ErrMalformed and never contains the input.
func DecodeObject(data []byte, v any) error { return oauthmeta.DecodeJSON(data, v) }

// DecodeArray decodes data, which must hold exactly one JSON array, into v
// (a pointer to a slice) by the same rule as [DecodeObject].
func DecodeArray(data []byte, v any) error { return oauthmeta.DecodeJSON(data, v) }

// DecodeObjectStrict is [DecodeObject] for documents this module's own
// operators write (policy files): an unknown name anywhere in the document
// is an error too, so a misspelt rule cannot silently go unenforced.
func DecodeObjectStrict(data []byte, v any) error {
	if err := oauthmeta.DecodeJSON(data, v); err != nil {
		return err
	}
	// The document is well-formed and of v's shape, so decoding it again
	// while refusing unknown names can fail only for an unknown name. The
	// copy keeps v as decoded.
	again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	err := jsonv2.Unmarshal(data, again, jsonv2.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) || !errors.Is(se.Err, jsonv2.ErrUnknownName) {
		return fmt.Errorf("%w: unexpected value", oauthmeta.ErrMalformed)
	}
	at := string(se.JSONPointer)
	if len(at) > 64 {
		at = at[:64] + "…"
	}
	return fmt.Errorf("%w: unknown name at %s", oauthmeta.ErrMalformed, at)
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
