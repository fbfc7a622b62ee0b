package oauthmeta

import (
	"encoding/json"
	"errors"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// IntrospectionResponse is the RFC 7662 §2.2 token introspection response.
// Only Active is required; an inactive token's response carries nothing else.
type IntrospectionResponse struct {
	// Active is "active" (§2.2). REQUIRED.
	Active bool `json:"active"`
	// Scope is "scope", space-separated. OPTIONAL.
	Scope string `json:"scope,omitempty"`
	// ClientID is "client_id". OPTIONAL.
	ClientID string `json:"client_id,omitempty"`
	// Username is "username". OPTIONAL.
	Username string `json:"username,omitempty"`
	// TokenType is "token_type". OPTIONAL.
	TokenType string `json:"token_type,omitempty"`
	// Exp is "exp", seconds since the epoch. OPTIONAL.
	Exp int64 `json:"exp,omitempty"`
	// Iat is "iat". OPTIONAL.
	Iat int64 `json:"iat,omitempty"`
	// Nbf is "nbf". OPTIONAL.
	Nbf int64 `json:"nbf,omitempty"`
	// Sub is "sub". OPTIONAL.
	Sub string `json:"sub,omitempty"`
	// Aud is "aud", a string or an array of strings. OPTIONAL.
	Aud Audience `json:"aud,omitempty"`
	// Iss is "iss". OPTIONAL.
	Iss string `json:"iss,omitempty"`
	// Jti is "jti". OPTIONAL.
	Jti string `json:"jti,omitempty"`
	// Cnf is "cnf" (RFC 7800; RFC 9449 §6.2 "jkt"). OPTIONAL.
	Cnf *Confirmation `json:"cnf,omitempty"`
	// Act is "act" (RFC 8693 §4.1), the actor chain of a delegated token;
	// check it with [Actor.Validate]. OPTIONAL.
	Act *Actor `json:"act,omitempty"`
}

// Confirmation is the RFC 7800 "cnf" claim, with the RFC 9449 §6.1 JWK
// thumbprint member.
type Confirmation struct {
	// JKT is "jkt", the base64url SHA-256 JWK thumbprint of the DPoP key.
	JKT string `json:"jkt,omitempty"`
}

// ParseIntrospectionResponse decodes an introspection response strictly.
func ParseIntrospectionResponse(data []byte) (*IntrospectionResponse, error) {
	var r IntrospectionResponse
	if err := DecodeJSON(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Audience is an "aud" value: one string or an array of strings (RFC 7519
// §4.1.3). It always encodes as an array unless it has exactly one member.
type Audience []string

// MarshalJSON encodes a single audience as a string, several as an array.
func (a Audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

// UnmarshalJSON accepts a string or an array of strings, nothing else
// (the rules of [Audience.UnmarshalJSONFrom], for encoding/json).
func (a *Audience) UnmarshalJSON(data []byte) error {
	if err := jsonv2.Unmarshal(data, a); err != nil {
		return errAudience
	}
	return nil
}

// UnmarshalJSONFrom accepts a string or an array of strings, nothing else,
// read in place from a go-json-experiment decoder ([DecodeJSON]).
func (a *Audience) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		*a = nil
		return nil
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		// Like a slice decoded by go-json-experiment, the value's
		// storage is reused when it has room.
		*a = append((*a)[:0], tok.String())
		return nil
	case '[':
		var list []string
		if err := jsonv2.UnmarshalDecode(dec, &list); err != nil {
			var se *jsonv2.SemanticError
			if !errors.As(err, &se) {
				return err
			}
			return errAudience
		}
		*a = list
		return nil
	}
	if err := dec.SkipValue(); err != nil {
		return err
	}
	return errAudience
}

var errAudience = errField(ErrMalformed, "aud", "not a string or array of strings")

// Contains reports whether s is one of the audience values, compared exactly.
func (a Audience) Contains(s string) bool { return slices.Contains(a, s) }
