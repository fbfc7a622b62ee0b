package jsonx

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Members calls fn with the name and the raw value of each member of the
// single JSON object data holds, in document order, by the rules of
// [DecodeObject]: names are compared case-sensitively, and a duplicate
// name, invalid UTF-8 or anything but white space after the object is an
// error. Each value is a sub-slice of data, not a copy, so that reading the
// envelope of a large document (a JSON-RPC message) does not double it in
// memory; it stays valid as long as data does. An error from fn ends the
// walk and is returned as it is. The other errors never contain the input.
func Members(data []byte, fn func(name string, value []byte) error) error {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return ErrNotObject
	}
	// A bytes.Buffer is parsed in place: the values ReadValue returns
	// alias data.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data))
	syntax := func(err error) error { return fmt.Errorf("%w: %s", ErrSyntax, describe(err)) }
	if _, err := dec.ReadToken(); err != nil {
		return syntax(err)
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return syntax(err)
		}
		name := tok.String() // before the next read, which invalidates tok
		value, err := dec.ReadValue()
		if err != nil {
			return syntax(err)
		}
		if err := fn(name, value); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return syntax(err)
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: invalid JSON", ErrSyntax)
	}
	return nil
}
