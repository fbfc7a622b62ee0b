package resource

import (
	"strconv"
)

// fastClaims is what decodeClaims extracts: the registered claims the
// checks use. Strings are substrings of one copy of the payload; numbers
// are values with a presence flag.
type fastClaims struct {
	iss, sub, clientID, scope, jti string
	aud                            []string
	exp, nbf, iat                  float64
	hasExp, hasNbf, hasIat         bool
	cnf                            []byte // raw "cnf" value; nil when absent or null
}

// decodeClaims decodes a JWT claims set (RFC 7519 §4) with the same rules
// as internal/jsonx: exactly one JSON object, member names matched
// case-sensitively, a duplicate name in any object or invalid UTF-8 in any
// string is an error, unknown members are ignored, and each registered
// claim must have its JSON type (null counts as absent). It is the
// verification hot path's allocation-light equivalent of
// jsonx.DecodeObject(payload, &jwtClaims{}); FuzzDecodeClaims holds the two
// to the same answers.
func decodeClaims(payload []byte) (fastClaims, error) {
	return decodeClaimsInto(payload, nil)
}

// decodeClaimsInto is decodeClaims storing a single-string "aud" in one
// (when not nil), so that the common audience costs no allocation of its
// own: c.aud is then one[:].
func decodeClaimsInto(payload []byte, one *[1]string) (fastClaims, error) {
	var c fastClaims
	s := scanner{data: payload, strict: true, text: string(payload)}
	if s.peek() != '{' {
		return c, errScan
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "iss":
			return s.stringClaim(&c.iss)
		case "sub":
			return s.stringClaim(&c.sub)
		case "client_id":
			return s.stringClaim(&c.clientID)
		case "scope":
			return s.stringClaim(&c.scope)
		case "jti":
			return s.stringClaim(&c.jti)
		case "aud":
			return s.audienceClaim(&c.aud, one)
		case "exp":
			return s.numberClaim(&c.exp, &c.hasExp)
		case "nbf":
			return s.numberClaim(&c.nbf, &c.hasNbf)
		case "iat":
			return s.numberClaim(&c.iat, &c.hasIat)
		case "cnf":
			start := s.pos
			if err := s.value(); err != nil {
				return err
			}
			if raw := trimSpace(s.data[start:s.pos]); string(raw) != "null" {
				c.cnf = raw
			}
			return nil
		}
		return s.value()
	})
	if err != nil {
		return fastClaims{}, err
	}
	if s.ws(); s.pos != len(s.data) {
		return fastClaims{}, errScan
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
	return s.peek() == 'n' && s.literal("null") == nil
}

// text returns a string value: a substring of s.text when the value had
// no escapes (no allocation), a new string otherwise.
func (s *scanner) textValue() (string, error) {
	start := s.pos + 1
	v, err := s.str(true)
	if err != nil {
		return "", err
	}
	if s.text != "" && (len(v) == 0 || &v[0] == &s.data[start]) {
		return s.text[start : start+len(v)], nil
	}
	return string(v), nil
}

func (s *scanner) stringClaim(dst *string) error {
	if s.null() {
		*dst = ""
		return nil
	}
	if s.peek() != '"' {
		return errScan
	}
	v, err := s.textValue()
	*dst = v
	return err
}

func (s *scanner) numberClaim(dst *float64, has *bool) error {
	if s.null() {
		*dst, *has = 0, false
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
	f, ok := parseNumber(s.data[start:s.pos])
	if !ok {
		return errScan
	}
	*dst, *has = f, true
	return nil
}

// parseNumber converts a JSON number (already validated): plain integers
// of up to 15 digits directly, anything else through strconv.ParseFloat.
// Out-of-range values are errors.
func parseNumber(b []byte) (float64, bool) {
	if len(b) > 0 && len(b) <= 15 {
		var n int64
		i := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			n = n*10 + int64(b[i]-'0')
		}
		if i == len(b) {
			return float64(n), true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// audienceClaim reads "aud": a string or an array of strings (RFC 7519
// §4.1.3). A single string goes to one when it is not nil.
func (s *scanner) audienceClaim(dst *[]string, one *[1]string) error {
	if s.null() {
		*dst = nil
		return nil
	}
	switch s.peek() {
	case '"':
		v, err := s.textValue()
		if err != nil {
			return err
		}
		if one == nil {
			one = new([1]string)
		}
		one[0] = v
		*dst = one[:]
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
		v, err := s.textValue()
		if err != nil {
			return err
		}
		list = append(list, v)
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
