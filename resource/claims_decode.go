package resource

import (
	"strconv"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// decodeClaims decodes a JWT claims set (RFC 7519 §4) with the same rules
// as internal/jsonx: exactly one JSON object, member names matched
// case-sensitively, a duplicate name in any object or invalid UTF-8 in any
// string is an error, unknown members are ignored, and each registered
// claim must have its JSON type (null counts as absent). It is the
// verification hot path's allocation-light equivalent of
// jsonx.DecodeObject(payload, &jwtClaims{}); FuzzDecodeClaims holds the two
// to the same answers.
func decodeClaims(payload []byte) (jwtClaims, error) {
	var c jwtClaims
	s := scanner{data: payload, strict: true}
	if s.peek() != '{' {
		return c, errScan
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "iss":
			return s.stringClaim(&c.Iss)
		case "sub":
			return s.stringClaim(&c.Sub)
		case "client_id":
			return s.stringClaim(&c.ClientID)
		case "scope":
			return s.stringClaim(&c.Scope)
		case "jti":
			return s.stringClaim(&c.Jti)
		case "aud":
			return s.audienceClaim(&c.Aud)
		case "exp":
			return s.numberClaim(&c.Exp)
		case "nbf":
			return s.numberClaim(&c.Nbf)
		case "iat":
			return s.numberClaim(&c.Iat)
		case "cnf":
			start := s.pos
			if err := s.value(); err != nil {
				return err
			}
			if raw := trimSpace(s.data[start:s.pos]); string(raw) != "null" {
				c.Cnf = raw
			}
			return nil
		}
		return s.value()
	})
	if err != nil {
		return jwtClaims{}, err
	}
	if s.ws(); s.pos != len(s.data) {
		return jwtClaims{}, errScan
	}
	return c, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && s.literal("null") == nil {
		return true
	}
	return false
}

func (s *scanner) stringClaim(dst *string) error {
	if s.null() {
		*dst = ""
		return nil
	}
	if s.peek() != '"' {
		return errScan
	}
	v, err := s.str(true)
	if err != nil {
		return err
	}
	*dst = string(v)
	return nil
}

func (s *scanner) numberClaim(dst **float64) error {
	if s.null() {
		*dst = nil
		return nil
	}
	c := s.peek()
	if c != '-' && (c < '0' || c > '9') {
		return errScan
	}
	start := s.pos
	if err := s.number(); err != nil {
		return err
	}
	f, err := strconv.ParseFloat(string(s.data[start:s.pos]), 64)
	if err != nil {
		return errScan
	}
	*dst = &f
	return nil
}

// audienceClaim reads "aud": a string or an array of strings (RFC 7519
// §4.1.3).
func (s *scanner) audienceClaim(dst *oauthmeta.Audience) error {
	if s.null() {
		*dst = nil
		return nil
	}
	switch s.peek() {
	case '"':
		v, err := s.str(true)
		if err != nil {
			return err
		}
		*dst = oauthmeta.Audience{string(v)}
		return nil
	case '[':
	default:
		return errScan
	}
	s.pos++
	list := []string{}
	if s.peek() == ']' {
		s.pos++
		*dst = list
		return nil
	}
	for {
		if s.peek() != '"' {
			return errScan
		}
		v, err := s.str(true)
		if err != nil {
			return err
		}
		list = append(list, string(v))
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			*dst = list
			return nil
		default:
			return errScan
		}
	}
}
