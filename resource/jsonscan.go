package resource

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small strict JSON scanner (RFC 8259) used to read the
// few members of a JSON-RPC request the scope policy needs without
// decoding the rest.

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errScan
	}
	s.pos++
	return nil
}

// object scans an object, calling member for each name with the scanner
// positioned at the value; member must consume the value.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.depth++; s.depth > maxJSONDepth {
		return errScan
	}
	if s.peek() == '}' {
		s.pos++
		s.depth--
		return nil
	}
	var seenArr [16][]byte
	seen := seenArr[:0]
	for {
		if s.peek() != '"' {
			return errScan
		}
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if s.strict {
			for _, k := range seen {
				// Length and last byte first: most names differ there,
				// and the byte compare is a call.
				if len(k) == len(key) && (len(k) == 0 || k[len(k)-1] == key[len(k)-1]) && string(k) == string(key) {
					return errScan // duplicate member name
				}
			}
			seen = append(seen, key)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return errScan
		}
	}
}

func (s *scanner) array() error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.depth++; s.depth > maxJSONDepth {
		return errScan
	}
	if s.peek() == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return errScan
		}
	}
}

// value validates and skips any JSON value.
func (s *scanner) value() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) error { return s.value() })
	case c == '[':
		return s.array()
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return errScan
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return errScan
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}

func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos < len(s.data) && s.data[s.pos] == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return errScan
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return errScan
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return errScan
		}
	}
	return nil
}

// str scans a string starting at '"'. With decode, it returns the decoded
// value: a sub-slice of the input when there are no escapes, otherwise a
// new slice. Lone UTF-16 surrogates in escapes are refused. The common case
// (no escapes) is found with IndexByte and a word-at-a-time control
// character check.
func (s *scanner) str(decode bool) ([]byte, error) {
	s.pos++ // opening quote
	start := s.pos
	// Short strings (member names, most values): a plain loop is cheaper
	// than the calls below.
	var high byte
	for i, end := start, min(len(s.data), start+24); i < end; i++ {
		c := s.data[i]
		high |= c
		switch {
		case c == '"':
			v := s.data[start:i]
			if s.strict && high >= 0x80 && !utf8.Valid(v) {
				return nil, errScan
			}
			s.pos = i + 1
			return v, nil
		case c == '\\':
			s.pos = i
			return s.escaped(start, decode)
		case c < 0x20:
			return nil, errScan
		}
	}
	rest := s.data[start:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return nil, errScan
	}
	seg := rest[:q]
	if bs := bytes.IndexByte(seg, '\\'); bs >= 0 {
		if hasControl(seg[:bs]) {
			return nil, errScan
		}
		s.pos = start + bs
		return s.escaped(start, decode)
	}
	if hasControl(seg) || (s.strict && !utf8.Valid(seg)) {
		return nil, errScan
	}
	s.pos = start + q + 1
	return seg, nil
}

// hasControl reports whether b has a byte below 0x20, which JSON strings
// may not contain unescaped.
func hasControl(b []byte) bool {
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if (x-0x2020202020202020)&^x&0x8080808080808080 != 0 {
			break // some byte may be below 0x20: check byte by byte
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// escaped continues a string at its first backslash.
func (s *scanner) escaped(start int, decode bool) ([]byte, error) {
	var out []byte
	if decode {
		out = append(s.buf[:0], s.data[start:s.pos]...)
	}
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			if s.strict && !utf8.Valid(s.data[start:s.pos]) {
				return nil, errScan
			}
			s.pos++
			if !decode {
				return nil, nil
			}
			s.buf = out[len(out):]
			return out, nil
		case c < 0x20:
			return nil, errScan
		case c != '\\':
			if decode {
				out = append(out, c)
			}
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			return nil, errScan
		}
		e := s.data[s.pos+1]
		s.pos += 2
		var r rune
		switch e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			var err error
			if r, err = s.unicodeEscape(); err != nil {
				return nil, err
			}
		default:
			return nil, errScan
		}
		if decode {
			out = utf8.AppendRune(out, r)
		}
	}
	return nil, errScan
}

// unicodeEscape reads the hex digits after "\u" (and a following low
// surrogate escape when the first is a high surrogate).
func (s *scanner) unicodeEscape() (rune, error) {
	r, ok := s.hex4()
	if !ok {
		return 0, errScan
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r >= 0xDC00 || s.pos+1 >= len(s.data) || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
		return 0, errScan
	}
	s.pos += 2
	r2, ok := s.hex4()
	if !ok {
		return 0, errScan
	}
	dec := utf16.DecodeRune(r, r2)
	if dec == utf8.RuneError {
		return 0, errScan
	}
	return dec, nil
}

func (s *scanner) hex4() (rune, bool) {
	if len(s.data)-s.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// foldEq reports whether key equals target (lower-case ASCII) under the
// case folding some JSON decoders apply to member names (encoding/json v1:
// ASCII case, and U+017F and U+212A folding to "s" and "k").
func foldEq(key []byte, target string) bool {
	i := 0
	for t := 0; t < len(target); t++ {
		if i >= len(key) {
			return false
		}
		c := key[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case c == target[t]:
			i++
		case target[t] == 's' && i+1 < len(key) && key[i] == 0xC5 && key[i+1] == 0xBF:
			i += 2
		case target[t] == 'k' && i+2 < len(key) && key[i] == 0xE2 && key[i+1] == 0x84 && key[i+2] == 0xAA:
			i += 3
		default:
			return false
		}
	}
	return i == len(key)
}
