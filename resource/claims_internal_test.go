package resource

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// jwtClaims is the RFC 9068 §2.2 payload shape for internal/jsonx, the
// reference decodeClaims is compared against.
type jwtClaims struct {
	Iss      string             `json:"iss"`
	Sub      string             `json:"sub"`
	Aud      oauthmeta.Audience `json:"aud"`
	Exp      *float64           `json:"exp"`
	Nbf      *float64           `json:"nbf"`
	Iat      *float64           `json:"iat"`
	ClientID string             `json:"client_id"`
	Scope    string             `json:"scope"`
	Jti      string             `json:"jti"`
	Cnf      oauthmeta.RawJSON  `json:"cnf"`
}

func TestDecodeClaims(t *testing.T) {
	t.Parallel()
	good := []string{
		`{"iss":"a","aud":["x","y"],"exp":1.5e9,"nbf":null,"scope":"a b","x":{"y":[1,{"z":null}]}}`,
		` {"aud":"x","cnf":{"jkt":"t"},"iss":"\u0061"} `,
		`{}`,
	}
	bad := []string{
		`{"iss":"a","iss":"b"}`, `{"x":{"a":1,"a":2}}`, `{"iss":1}`, `{"aud":[1]}`, `{"aud":{}}`,
		`{"exp":"1"}`, `{"exp":1e400}`, "{\"sub\":\"\xff\"}", "{\"\xff\":1}", `[]`, `{"iss":"a"} x`, `{"iss":"\ud800"}`,
	}
	for _, s := range good {
		if _, err := decodeClaims([]byte(s)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := decodeClaims([]byte(s)); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}

// FuzzDecodeClaims holds decodeClaims to the answers of internal/jsonx, the
// project's strict decoder: the same inputs accepted, the same values.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://a","sub":"u","aud":["https://h/mcp","x"],"exp":1785585600,"iat":1.5,"scope":"a b","client_id":"c","jti":"j"}`,
		`{"aud":"x","cnf":{"jkt":"abc"},"nbf":null}`, `{"iss":"a","iss":"b"}`, `{"x":[{"a":1,"a":2}]}`, `{"exp":-0.0e-5}`,
		`{"aud":[]}`, `{"sub":"\u00e9\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, err1 := decodeClaims(data)
		got := fast.jwtClaims()
		var want jwtClaims
		err2 := jsonx.DecodeObject(data, &want)
		if (err1 == nil) != (err2 == nil) {
			if err1 != nil && depth(data) > maxJSONDepth {
				return // deeper nesting than this decoder allows
			}
			t.Fatalf("decodeClaims err %v, jsonx err %v, input %q", err1, err2, data)
		}
		if err1 != nil {
			return
		}
		gb, wb := len(got.Cnf) > 0 && string(got.Cnf) != "null", len(want.Cnf) > 0 && string(want.Cnf) != "null"
		got.Cnf, want.Cnf = nil, nil
		if len(got.Aud) == 0 && len(want.Aud) == 0 {
			got.Aud, want.Aud = nil, nil
		}
		if gb != wb || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeClaims %+v (bound %v), jsonx %+v (bound %v), input %q", got, gb, want, wb, data)
		}
	})
}

func depth(data []byte) int {
	d, m := 0, 0
	for _, c := range data {
		switch c {
		case '{', '[':
			d++
			m = max(m, d)
		case '}', ']':
			d--
		}
	}
	return m
}

// jwtClaims converts to the jsonx-shaped struct, for comparisons.
func (c fastClaims) jwtClaims() jwtClaims {
	num := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	return jwtClaims{Iss: c.iss, Sub: c.sub, ClientID: c.clientID, Scope: c.scope, Jti: c.jti, Aud: c.aud,
		Exp: num(c.exp, c.hasExp), Nbf: num(c.nbf, c.hasNbf), Iat: num(c.iat, c.hasIat), Cnf: c.cnf}
}

// scopeCases are scope claims for the parseScope equivalence checks
// (RS-12: the token's scopes are what the policy compares against).
var scopeCases = []string{
	"", " ", "   ", "a", "a b", "a  b", " a b ", "a b a", "a a a a a", "a b c d", "a b c d e",
	"a b c d e f g h", "mcp:tools files:read", "a\tb", "a\"b", "a\\b", "a\x7fb", "a é", "a\x00",
	"!#[]~ x", "a b  c d a b", "a b c d d",
}

func TestParseScopeMatchesOAuthMeta(t *testing.T) {
	t.Parallel()
	for _, s := range scopeCases {
		t.Run(strconv.Quote(s), func(t *testing.T) {
			t.Parallel()
			checkParseScope(t, s)
		})
	}
}

func FuzzParseScope(f *testing.F) {
	for _, s := range scopeCases {
		f.Add(s)
	}
	f.Fuzz(checkParseScope)
}

// checkParseScope holds parseScope, with and without inline storage, to
// oauthmeta.ParseScope, and checks that the result has no spare capacity
// (an append must never write into the shared storage).
func checkParseScope(t *testing.T, s string) {
	want, err := oauthmeta.ParseScope(s)
	for _, n := range []int{0, 1, scopeInline} {
		got, ok := parseScope(s, make([]string, n))
		if ok != (err == nil) || !slices.Equal(got, want) || (got == nil) != (want == nil) || cap(got) != len(got) {
			t.Fatalf("parseScope(%q, buf %d) = %q, %v (cap %d); oauthmeta.ParseScope = %q, %v", s, n, got, ok, cap(got), want, err)
		}
	}
}
