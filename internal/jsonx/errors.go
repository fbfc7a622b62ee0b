package jsonx

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Errors of [Members] and [DecodeValue]. Both wrap oauthmeta.ErrMalformed,
// as the errors of [DecodeObject] do.
var (
	ErrNotObject = fmt.Errorf("%w: not a JSON object", oauthmeta.ErrMalformed)
	ErrSyntax    = fmt.Errorf("%w: invalid JSON", oauthmeta.ErrMalformed)
)

// describe names the kind of a decoder error without quoting the input.
func describe(err error) string {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return "duplicate object name"
	}
	return "malformed"
}
