package jsonx

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string // name=value pairs, joined by spaces
		wantErr error
	}{
		{name: "members in order", in: `{"b":1,"a":{"x":[1, 2]},"c":"s"}`, want: `b=1 a={"x":[1, 2]} c="s"`},
		{name: "white space around", in: " \n{ \"a\" : null }\n ", want: `a=null`},
		{name: "empty object", in: `{}`, want: ``},
		{name: "names are case-sensitive", in: `{"a":1,"A":2}`, want: `a=1 A=2`},
		{name: "escaped name", in: `{"\u0061":1}`, want: `a=1`},
		{name: "duplicate name", in: `{"a":1,"a":2}`, wantErr: ErrSyntax},
		{name: "duplicate name once escaped", in: `{"a":1,"\u0061":2}`, wantErr: ErrSyntax},
		{name: "duplicate inside a value", in: `{"a":{"x":1,"x":2}}`, wantErr: ErrSyntax},
		{name: "invalid UTF-8", in: "{\"a\":\"\xff\"}", wantErr: ErrSyntax},
		{name: "raw newline in a string", in: "{\"a\":\"x\ny\"}", wantErr: ErrSyntax},
		{name: "trailing garbage", in: `{"a":1} {}`, wantErr: ErrSyntax},
		{name: "trailing comma", in: `{"a":1,}`, wantErr: ErrSyntax},
		{name: "truncated", in: `{"a":1`, wantErr: ErrSyntax},
		{name: "truncated value", in: `{"a":[1,`, wantErr: ErrSyntax},
		{name: "array", in: `[{"a":1}]`, wantErr: ErrNotObject},
		{name: "null", in: `null`, wantErr: ErrNotObject},
		{name: "empty", in: ``, wantErr: ErrNotObject},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			err := Members([]byte(tc.in), func(name string, value []byte) error {
				got = append(got, name+"="+string(value))
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && strings.Join(got, " ") != tc.want {
				t.Errorf("members %q, want %q", strings.Join(got, " "), tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "\xff") {
				t.Error("the error quotes the input")
			}
		})
	}
}

// TestMembersNoCopy: the values are sub-slices of the input (a change to
// the input shows in them), and an error of fn ends the walk.
func TestMembersNoCopy(t *testing.T) {
	t.Parallel()
	data := []byte(`{"small":1,"large":"` + strings.Repeat("x", 1<<16) + `","after":2}`)
	stop := errors.New("stop")
	var seen []string
	var large []byte
	err := Members(data, func(name string, value []byte) error {
		seen = append(seen, name)
		if name == "large" {
			large = value
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || strings.Join(seen, ",") != "small,large" {
		t.Fatalf("err %v after %v, want fn's error after small,large", err, seen)
	}
	data[bytes.Index(data, []byte("xx"))] = 'y'
	if len(large) != 1<<16+2 || large[1] != 'y' {
		t.Error("the value is a copy, not a sub-slice of the input")
	}
}
