package oauthmeta

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/golden"
)

// TestParseChallenges covers requirement CL-01: several challenges, quoted
// strings with escapes, case-insensitive scheme and parameter names, token68.
func TestParseChallenges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    []Challenge
		wantErr error
	}{
		{
			name: "CL-01 bearer and dpop in one field",
			in:   []string{`Bearer realm="x", scope="a b", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", DPoP algs="ES256"`},
			want: []Challenge{
				{Scheme: "Bearer", Params: []Param{{"realm", "x"}, {"scope", "a b"}, {"resource_metadata", "https://h/.well-known/oauth-protected-resource/mcp"}}},
				{Scheme: "DPoP", Params: []Param{{"algs", "ES256"}}},
			},
		},
		{
			name: "escapes in quoted string",
			in:   []string{`Bearer error_description="say \"hi\" \\ bye"`},
			want: []Challenge{{Scheme: "Bearer", Params: []Param{{"error_description", `say "hi" \ bye`}}}},
		},
		{
			name: "token values and whitespace around equals",
			in:   []string{`bearer error = invalid_token ,scope="x"`},
			want: []Challenge{{Scheme: "bearer", Params: []Param{{"error", "invalid_token"}, {"scope", "x"}}}},
		},
		{
			name: "token68",
			in:   []string{`Basic dXNlcjpwYXNz==, Bearer realm="r"`},
			want: []Challenge{
				{Scheme: "Basic", Token68: "dXNlcjpwYXNz=="},
				{Scheme: "Bearer", Params: []Param{{"realm", "r"}}},
			},
		},
		{
			name: "scheme without parameters then another",
			in:   []string{`Bearer, DPoP algs="ES256 PS256"`},
			want: []Challenge{{Scheme: "Bearer"}, {Scheme: "DPoP", Params: []Param{{"algs", "ES256 PS256"}}}},
		},
		{
			name: "several header fields and empty list elements",
			in:   []string{` , Bearer realm="a",, `, `Basic realm="b"`},
			want: []Challenge{
				{Scheme: "Bearer", Params: []Param{{"realm", "a"}}},
				{Scheme: "Basic", Params: []Param{{"realm", "b"}}},
			},
		},
		{name: "empty", in: []string{""}, want: nil},
		{name: "repeated parameter", in: []string{`Bearer scope="a", SCOPE="b"`}, wantErr: ErrMalformedChallenge},
		{name: "unterminated quote", in: []string{`Bearer realm="x`}, wantErr: ErrMalformedChallenge},
		{name: "missing value", in: []string{`Bearer realm=, scope="a"`}, wantErr: ErrMalformedChallenge},
		{name: "control character", in: []string{"Bearer realm=\"a\x01b\""}, wantErr: ErrMalformedChallenge},
		{name: "garbage after value", in: []string{`Bearer realm="a" scope="b"`}, wantErr: ErrMalformedChallenge},
		{name: "no scheme", in: []string{`="x"`}, wantErr: ErrMalformedChallenge},
		{name: "too long", in: []string{"Bearer realm=\"" + strings.Repeat("a", 9000) + "\""}, wantErr: ErrMalformedChallenge},
		{name: "too many challenges", in: []string{strings.Repeat("A, ", 20)}, wantErr: ErrMalformedChallenge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseChallenges(tt.in...)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestChallengeAccessors(t *testing.T) {
	t.Parallel()
	cs, err := ParseChallenges(`Bearer Error="insufficient_scope", Scope="files:read  files:write"`)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := FindChallenge(cs, "BEARER")
	if !ok {
		t.Fatal("FindChallenge: not found")
	}
	if got := c.Value(ParamError); got != "insufficient_scope" {
		t.Errorf("error = %q", got)
	}
	if got := c.Scopes(); !reflect.DeepEqual(got, []string{"files:read", "files:write"}) {
		t.Errorf("Scopes() = %q", got)
	}
	if _, ok := c.Get("realm"); ok {
		t.Error("Get(realm) found a parameter that is absent")
	}
	if _, ok := FindChallenge(cs, "DPoP"); ok {
		t.Error("FindChallenge(DPoP) found a challenge that is absent")
	}
}

func TestChallengeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     Challenge
		golden string
	}{
		{
			name: "RS-04 initial 401",
			in: Challenge{Scheme: "Bearer", Params: []Param{
				{ParamResourceMetadata, "https://h/.well-known/oauth-protected-resource/mcp"},
				{ParamScope, "files:read"},
			}},
			golden: "challenge_401.txt",
		},
		{
			name: "RS-12 insufficient scope",
			in: Challenge{Scheme: "Bearer", Params: []Param{
				{ParamError, string(CodeInsufficientScope)},
				{ParamScope, "files:write"},
				{ParamResourceMetadata, "https://h/.well-known/oauth-protected-resource/mcp"},
			}},
			golden: "challenge_403.txt",
		},
		{
			name: "hostile values cannot split the header",
			in: Challenge{Scheme: "Bearer", Params: []Param{
				{ParamErrorDescription, "a\"b\\c\r\nSet-Cookie: x=1\x00\x7f"},
				{"bad name", "dropped"},
				{"ERROR_description", "repeated, dropped"},
			}},
			golden: "challenge_hostile.txt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.in.String()
			golden.Text(t, tt.golden, got)
			if strings.ContainsAny(got, "\r\n\x00") {
				t.Fatalf("formatted challenge contains a control character: %q", got)
			}
			back, err := ParseChallenges(got)
			if err != nil {
				t.Fatalf("formatted challenge does not parse: %v", err)
			}
			if len(back) != 1 || !strings.EqualFold(back[0].Scheme, tt.in.Scheme) {
				t.Fatalf("round trip = %#v", back)
			}
		})
	}
}

// FuzzParseChallenge checks that the parser never panics and that whatever
// it accepts survives a format/parse round trip unchanged.
func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="x", scope="a b", resource_metadata="https://h/x", DPoP algs="ES256"`,
		`Bearer error="invalid_token", error_description="token \"expired\""`,
		`Basic dXNlcjpwYXNz==`,
		`Bearer, Basic`,
		`Bearer realm=`,
		"Bearer realm=\"\t\"",
		`,,,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cs, err := ParseChallenges(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedChallenge) {
				t.Fatalf("error %v does not wrap ErrMalformedChallenge", err)
			}
			return
		}
		for _, c := range cs {
			if c.Token68 != "" {
				continue
			}
			back, err := ParseChallenges(c.String())
			if err != nil {
				t.Fatalf("re-parse of %q: %v", c.String(), err)
			}
			if len(back) != 1 || back[0].Scheme != c.Scheme || len(back[0].Params) != len(c.Params) {
				t.Fatalf("round trip %q -> %#v", c.String(), back)
			}
			for i, p := range c.Params {
				if back[0].Params[i] != p {
					t.Fatalf("param %d: %#v != %#v", i, back[0].Params[i], p)
				}
			}
		}
	})
}
