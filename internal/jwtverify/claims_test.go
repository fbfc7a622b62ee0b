package jwtverify

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

func TestTimesCheck(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	f := func(v float64) *float64 { return &v }
	n := float64(now.Unix())
	tests := []struct {
		name string
		rule Times
		c    Claims
		want error
	}{
		{"ok", Times{}, Claims{Expiry: f(n + 60)}, nil},
		{"no exp", Times{}, Claims{}, ErrMissingExpiry},
		{"expired", Times{}, Claims{Expiry: f(n)}, ErrExpired},
		{"expired within leeway", Times{Leeway: time.Minute}, Claims{Expiry: f(n - 30)}, nil},
		{"exp after year 9999", Times{}, Claims{Expiry: f(MaxNumericDate + 1)}, ErrBadDate},
		{"exp NaN", Times{}, Claims{Expiry: f(math.NaN())}, ErrBadDate},
		{"negative iat", Times{}, Claims{Expiry: f(n + 60), IssuedAt: f(-1)}, ErrBadDate},
		{"lifetime", Times{MaxLifetime: time.Minute}, Claims{Expiry: f(n + 61)}, ErrLifetimeTooLong},
		{"lifetime with leeway", Times{MaxLifetime: time.Minute, Leeway: time.Second}, Claims{Expiry: f(n + 61)}, nil},
		{"nbf future", Times{}, Claims{Expiry: f(n + 60), NotBefore: f(n + 1)}, ErrNotYetValid},
		{"nbf within leeway", Times{Leeway: time.Second}, Claims{Expiry: f(n + 60), NotBefore: f(n + 1)}, nil},
		{"iat future", Times{}, Claims{Expiry: f(n + 60), IssuedAt: f(n + 1)}, ErrIssuedInFuture},
		{"iat required", Times{RequireIssuedAt: true}, Claims{Expiry: f(n + 60)}, ErrMissingIssuedAt},
		{"iat fractional", Times{}, Claims{Expiry: f(n + 60), IssuedAt: f(n - 0.5)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := tt.rule.Check(&tt.c, now)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeClaims(t *testing.T) {
	t.Parallel()
	type profile struct {
		Claims `json:",inline"`
		Scope  string `json:"scope"`
	}
	var p profile
	if err := DecodeClaims([]byte(`{"iss":"a","aud":"x","exp":1.5,"scope":"s","ISS":"b"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Issuer != "a" || len(p.Audience) != 1 || *p.Expiry != 1.5 || p.Scope != "s" {
		t.Fatalf("got %+v", p)
	}
	for _, bad := range []string{`{"iss":"a","iss":"b"}`, `{"aud":[1]}`, `{"exp":"1"}`, `[]`, "{\"sub\":\"\xff\"}"} {
		if err := DecodeClaims([]byte(bad), &p); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzDecodeClaims: a payload the claims decoder accepts is one valid JSON
// object without duplicate names, and the time rule never panics on it and
// returns times within the NumericDate range.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://a","sub":"u","aud":["https://h/mcp","x"],"exp":1785585600,"iat":1.5,"jti":"j"}`,
		`{"aud":"x","nbf":null}`, `{"iss":"a","iss":"b"}`, `{"x":[{"a":1,"a":2}]}`, `{"exp":-0.0e-5}`,
		`{"aud":[]}`, `{"sub":"\u00e9\ud83d\ude00"}`, `{"exp":1e400}`, `{"exp":1800000600}`, `{"exp":1800000600,"iat":1799999999.5}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Claims
		if DecodeClaims(data, &c) != nil {
			return
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("accepted %q", data)
		}
		exp, iat, err := Times{Leeway: time.Minute, MaxLifetime: time.Hour}.Check(&c, now)
		if err == nil && (exp.Unix() > MaxNumericDate || !iat.IsZero() && (iat.Unix() > MaxNumericDate || iat.Unix() < 0)) {
			t.Fatalf("times %v %v from %q", exp, iat, data)
		}
	})
}

// TestDecodeClaimsTimes: a time that is absent or null decodes to nil, a
// present one to its value, in a Claims and in a struct embedding it, also
// when the struct is decoded into again.
func TestDecodeClaimsTimes(t *testing.T) {
	t.Parallel()
	type profile struct {
		Claims `json:",inline"`
		Scope  string `json:"scope"`
	}
	val := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	for _, tt := range []struct{ in, exp, nbf, iat string }{
		{`{}`, "nil", "nil", "nil"},
		{`{"exp":1.5}`, "1.5", "nil", "nil"},
		{`{"exp":null,"nbf":0,"iat":7}`, "nil", "0", "7"},
		{`{"nbf":-0,"iat":null}`, "nil", "-0", "nil"},
		{`{"exp":2,"nbf":3,"iat":4}`, "2", "3", "4"},
	} {
		var c Claims
		var p profile
		if err := DecodeClaims([]byte(tt.in), &c); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if err := DecodeClaims([]byte(tt.in), &p); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		for _, got := range []*Claims{&c, &p.Claims} {
			if e, n, i := val(got.Expiry), val(got.NotBefore), val(got.IssuedAt); e != tt.exp || n != tt.nbf || i != tt.iat {
				t.Errorf("%s: exp %s nbf %s iat %s, want %s %s %s", tt.in, e, n, i, tt.exp, tt.nbf, tt.iat)
			}
		}
	}
	// Decoding again into the same value: the times present before stay
	// unless the payload has them (encoding/json's rule for a reused value).
	var p profile
	if err := DecodeClaims([]byte(`{"exp":1,"iat":2}`), &p); err != nil {
		t.Fatal(err)
	}
	if err := DecodeClaims([]byte(`{"exp":5,"nbf":6}`), &p); err != nil {
		t.Fatal(err)
	}
	if e, n, i := val(p.Expiry), val(p.NotBefore), val(p.IssuedAt); e != "5" || n != "6" || i != "2" {
		t.Errorf("reused: exp %s nbf %s iat %s, want 5 6 2", e, n, i)
	}
	// A failed decode leaves no NaN behind.
	var q Claims
	if DecodeClaims([]byte(`{"exp":1,"exp":2}`), &q) == nil {
		t.Fatal("duplicate exp accepted")
	}
	for _, f := range []*float64{q.Expiry, q.NotBefore, q.IssuedAt} {
		if f != nil && math.IsNaN(*f) {
			t.Fatal("NaN time after a failed decode")
		}
	}
}

// TestDecodeClaimsLeavesNoNaN: after a decode, successful or not, the
// time storage holds no NaN, so two decodes of one payload are equal
// (reflect.DeepEqual treats NaN as unequal to itself).
func TestDecodeClaimsLeavesNoNaN(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{}`, `{"exp":null,"nbf":null,"iat":null}`, `{"exp":1}`,
		`{"exp":1,"exp":2}`, `{"exp":"1"}`, `[]`} {
		var a, b Claims
		errA, errB := DecodeClaims([]byte(in), &a), DecodeClaims([]byte(in), &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: %v, then %v", in, errA, errB)
		}
		for i, f := range a.times {
			if math.IsNaN(f) {
				t.Errorf("%s: time storage %d is NaN", in, i)
			}
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two decodes differ: %+v, %+v", in, a, b)
		}
	}
}
