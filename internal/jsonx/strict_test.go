package jsonx

import (
	"errors"
	"strings"
	"testing"
)

type doc struct {
	Issuer string   `json:"issuer"`
	Scopes []string `json:"scopes_supported,omitempty"`
	Flag   bool     `json:"flag,omitempty"`
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    doc
		wantErr error
	}{
		{name: "ok", in: `{"issuer":"https://as","scopes_supported":["a"]}`, want: doc{Issuer: "https://as", Scopes: []string{"a"}}},
		{name: "unknown names ignored", in: `{"issuer":"https://as","x":{"y":[1,2]}}`, want: doc{Issuer: "https://as"}},
		{name: "leading whitespace", in: " \n{\"issuer\":\"i\"}", want: doc{Issuer: "i"}},
		{name: "duplicate name", in: `{"issuer":"https://good","issuer":"https://evil"}`, wantErr: ErrSyntax},
		{name: "case differs is a different name", in: `{"ISSUER":"https://evil"}`, want: doc{}},
		{name: "array", in: `[{"issuer":"x"}]`, wantErr: ErrNotObject},
		{name: "null", in: `null`, wantErr: ErrNotObject},
		{name: "empty", in: ``, wantErr: ErrNotObject},
		{name: "trailing garbage", in: `{"issuer":"x"} {}`, wantErr: ErrSyntax},
		{name: "wrong type", in: `{"issuer":5}`, wantErr: ErrSyntax},
		{name: "invalid utf8", in: "{\"issuer\":\"\xff\"}", wantErr: ErrSyntax},
		{name: "truncated", in: `{"issuer":"x"`, wantErr: ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got doc
			err := DecodeObject([]byte(tt.in), &got)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && (got.Issuer != tt.want.Issuer || len(got.Scopes) != len(tt.want.Scopes)) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeObjectErrorNeverEchoesInput(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-that-must-not-leak"
	for _, in := range []string{
		`{"issuer":` + secret + `}`,
		`{"issuer":"` + secret + `","issuer":"` + secret + `"}`,
		`{"flag":"` + secret + `"}`,
	} {
		var d doc
		err := DecodeObject([]byte(in), &d)
		if err == nil {
			t.Fatalf("DecodeObject(%q) succeeded", in)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q echoes input", err)
		}
	}
}

func TestDecodeObjectNamesDuplicate(t *testing.T) {
	t.Parallel()
	var d doc
	err := DecodeObject([]byte(`{"issuer":"a","flag":true,"issuer":"b"}`), &d)
	if err == nil || !strings.Contains(err.Error(), "duplicate object name") {
		t.Fatalf("err = %v, want a duplicate object name", err)
	}
}

func FuzzDecodeObject(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as","scopes_supported":["a","b"],"flag":true}`))
	f.Add([]byte(`{"issuer":"a","issuer":"b"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		_ = DecodeObject(data, &d)
	})
}
