package oauthmeta

import (
	"slices"
	"strings"
)

// Challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 §11.6.1): a scheme followed by either a token68 or a list of
// auth-params. Bearer challenges carry the RFC 6750 §3 parameters (realm,
// scope, error, error_description, error_uri) and the RFC 9728 §5.1
// resource_metadata parameter.
type Challenge struct {
	// Scheme is the auth-scheme, e.g. "Bearer" or "DPoP". Schemes are
	// case-insensitive in their ASCII letters only: compare them with
	// [FindChallenge], or by ASCII rules (strings.EqualFold also matches
	// non-ASCII letters such as the Kelvin sign to "k").
	Scheme string
	// Token68 is the token68 form of the credentials, if the challenge used
	// it instead of parameters.
	Token68 string
	// Params are the auth-params in order. Names are case-insensitive and
	// occur at most once; values are unquoted.
	Params []Param
}

// Param is one auth-param of a challenge.
type Param struct {
	Name  string
	Value string
}

// Names of the bearer challenge parameters (RFC 6750 §3, RFC 9728 §5.1,
// RFC 9449 §7.1).
const (
	ParamRealm            = "realm"
	ParamScope            = "scope"
	ParamError            = "error"
	ParamErrorDescription = "error_description"
	ParamErrorURI         = "error_uri"
	ParamResourceMetadata = "resource_metadata"
	ParamAlgs             = "algs"
)

// Get returns the value of the named parameter, matching names
// case-insensitively.
func (c Challenge) Get(name string) (string, bool) {
	if i := paramIndex(c.Params, name); i >= 0 {
		return c.Params[i].Value, true
	}
	return "", false
}

// Value returns the value of the named parameter, or "" if it is absent.
func (c Challenge) Value(name string) string {
	v, _ := c.Get(name)
	return v
}

// Scopes returns the tokens of the scope parameter, or nil if it is absent
// or malformed.
func (c Challenge) Scopes() []string {
	s, err := ParseScope(c.Value(ParamScope))
	if err != nil {
		return nil
	}
	return s
}

// String formats the challenge for a WWW-Authenticate header: the scheme, a
// space, then the parameters as name="value" separated by ", ". Values are
// RFC 9110 quoted-strings: '"' and '\' are escaped with '\', and bytes that
// may not appear in a quoted-string (control characters other than
// horizontal tab, DEL) are dropped, so a hostile value can never split the
// header. Parameters with an empty name, or repeating an earlier name, are
// dropped (RFC 9110: each name at most once per challenge).
func (c Challenge) String() string {
	var b strings.Builder
	b.WriteString(c.Scheme)
	if c.Token68 != "" && len(c.Params) == 0 {
		b.WriteByte(' ')
		b.WriteString(c.Token68)
		return b.String()
	}
	first := true
	for i, p := range c.Params {
		if p.Name == "" || skip(p.Name, 0, isTokenChar) < len(p.Name) || paramIndex(c.Params[:i], p.Name) >= 0 {
			continue
		}
		if first {
			b.WriteByte(' ')
			first = false
		} else {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		b.WriteString(`="`)
		for j := 0; j < len(p.Value); j++ {
			ch := p.Value[j]
			switch {
			case ch == '"' || ch == '\\':
				b.WriteByte('\\')
				b.WriteByte(ch)
			case ch == '\t' || (ch >= 0x20 && ch != 0x7f):
				b.WriteByte(ch)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// paramIndex returns the index of the named parameter, matching names
// case-insensitively, or -1.
func paramIndex(params []Param, name string) int {
	return slices.IndexFunc(params, func(p Param) bool { return equalFold(p.Name, name) })
}

// Limits on what ParseChallenges accepts.
const (
	maxChallengeHeader = 8 << 10
	maxChallenges      = 16
	maxParams          = 32
)

// ParseChallenges parses the values of one or more WWW-Authenticate header
// fields. It accepts several challenges per field,
// token68 and auth-param forms, quoted strings with backslash escapes,
// optional whitespace around "=" and ",", empty list elements, and matches
// scheme and parameter names case-insensitively. A parameter repeated in one
// challenge, an unterminated quoted string, a missing value or more than
// 8 KiB of input are errors wrapping [ErrMalformedChallenge].
func ParseChallenges(headers ...string) ([]Challenge, error) {
	total := 0
	for _, h := range headers {
		total += len(h)
	}
	if total > maxChallengeHeader {
		return nil, errField(ErrMalformedChallenge, "WWW-Authenticate", "too long")
	}
	var out []Challenge
	for _, h := range headers {
		p := challengeParser{s: h}
		cs, err := p.parse()
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
		if len(out) > maxChallenges {
			return nil, errField(ErrMalformedChallenge, "WWW-Authenticate", "too many challenges")
		}
	}
	return out, nil
}

// FindChallenge returns the first challenge whose scheme equals scheme
// case-insensitively.
func FindChallenge(challenges []Challenge, scheme string) (Challenge, bool) {
	for _, c := range challenges {
		if equalFold(c.Scheme, scheme) {
			return c, true
		}
	}
	return Challenge{}, false
}

type challengeParser struct {
	s   string
	pos int
}

func (p *challengeParser) fail(detail string) error {
	return errField(ErrMalformedChallenge, "WWW-Authenticate", detail)
}

func (p *challengeParser) parse() ([]Challenge, error) {
	var out []Challenge
	for {
		p.skipListSeparators()
		if p.pos >= len(p.s) {
			return out, nil
		}
		scheme := p.token()
		if scheme == "" {
			return nil, p.fail("expected auth-scheme")
		}
		c := Challenge{Scheme: scheme}
		spaces := p.skipSpaces()
		if p.pos < len(p.s) && p.s[p.pos] != ',' {
			if spaces == 0 {
				return nil, p.fail("expected space after auth-scheme")
			}
			if err := p.challengeBody(&c); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
		if len(out) > maxChallenges {
			return nil, p.fail("too many challenges")
		}
	}
}

// challengeBody parses either a token68 or a comma-separated list of
// auth-params, stopping before the scheme of the next challenge.
func (p *challengeParser) challengeBody(c *Challenge) error {
	if t68, ok := p.tryToken68(); ok {
		c.Token68 = t68
		return nil
	}
	for {
		name := p.token()
		if name == "" {
			return p.fail("expected auth-param")
		}
		p.skipSpaces()
		if p.pos >= len(p.s) || p.s[p.pos] != '=' {
			return p.fail("expected '=' after parameter name")
		}
		p.pos++
		p.skipSpaces()
		var value string
		if p.pos < len(p.s) && p.s[p.pos] == '"' {
			v, err := p.quoted()
			if err != nil {
				return err
			}
			value = v
		} else {
			value = p.token()
			if value == "" {
				return p.fail("expected parameter value")
			}
		}
		if paramIndex(c.Params, name) >= 0 {
			return p.fail("repeated parameter")
		}
		if len(c.Params) >= maxParams {
			return p.fail("too many parameters")
		}
		c.Params = append(c.Params, Param{Name: name, Value: value})
		p.skipSpaces()
		if p.pos >= len(p.s) {
			return nil
		}
		if p.s[p.pos] != ',' {
			return p.fail("expected ',' between parameters")
		}
		// After a comma: another auth-param of this challenge, or the
		// scheme of the next one. An auth-param is a token followed by
		// optional whitespace and '='.
		save := p.pos
		p.skipListSeparators()
		if p.pos >= len(p.s) {
			return nil
		}
		if !p.atAuthParam() {
			p.pos = save
			return nil
		}
	}
}

// atAuthParam reports whether the input at pos is token BWS "=" (and not the
// token68 padding "==").
func (p *challengeParser) atAuthParam() bool {
	i := skip(p.s, p.pos, isTokenChar)
	if i == p.pos {
		return false
	}
	i = skip(p.s, i, isSpace)
	return i < len(p.s) && p.s[i] == '='
}

// tryToken68 consumes a token68 if the challenge body is one: token68 chars,
// then '=' padding, then end of input or a comma.
func (p *challengeParser) tryToken68() (string, bool) {
	i := skip(p.s, p.pos, isToken68Char)
	if i == p.pos {
		return "", false
	}
	j := skip(p.s, i, func(c byte) bool { return c == '=' })
	k := skip(p.s, j, isSpace)
	if k < len(p.s) && p.s[k] != ',' {
		return "", false
	}
	// "name=" followed by end or comma is a token68 with padding only if
	// nothing follows the padding; "name=value" was excluded above.
	t := p.s[p.pos:j]
	p.pos = k
	return t, true
}

func (p *challengeParser) token() string {
	start := p.pos
	p.pos = skip(p.s, p.pos, isTokenChar)
	return p.s[start:p.pos]
}

func (p *challengeParser) quoted() (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for p.pos < len(p.s) {
		ch := p.s[p.pos]
		switch {
		case ch == '"':
			p.pos++
			return b.String(), nil
		case ch == '\\':
			if p.pos+1 >= len(p.s) {
				return "", p.fail("unterminated quoted-string")
			}
			next := p.s[p.pos+1]
			if next != '\t' && (next < 0x20 || next == 0x7f) {
				return "", p.fail("invalid quoted-pair")
			}
			b.WriteByte(next)
			p.pos += 2
		case ch == '\t' || (ch >= 0x20 && ch != 0x7f):
			b.WriteByte(ch)
			p.pos++
		default:
			return "", p.fail("control character in quoted-string")
		}
	}
	return "", p.fail("unterminated quoted-string")
}

// skipSpaces skips optional whitespace and returns how much it skipped.
func (p *challengeParser) skipSpaces() int {
	start := p.pos
	p.pos = skip(p.s, p.pos, isSpace)
	return p.pos - start
}

func (p *challengeParser) skipListSeparators() {
	p.pos = skip(p.s, p.pos, func(c byte) bool { return isSpace(c) || c == ',' })
}

// skip returns the index of the first byte of s at or after i that ok
// refuses, or len(s).
func skip(s string, i int, ok func(byte) bool) int {
	for i < len(s) && ok(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isTokenChar reports whether c is an RFC 9110 §5.6.2 tchar.
func isTokenChar(c byte) bool { return isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 }

// isToken68Char reports whether c may appear in a token68 before padding.
func isToken68Char(c byte) bool { return isAlnum(c) || strings.IndexByte("-._~+/", c) >= 0 }
